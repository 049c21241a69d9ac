//! Checks that a report really shows its charts, by rendering it in headless Chromium
//! (Debian package `chromium`): once with a small probe script appended that measures every
//! chart and data mark after layout and writes the counts into the DOM (read back with
//! `--dump-dom`), and once as a screenshot whose pixels are counted (not all background,
//! and the protocol colours present). Used by the tests; needs no network (the report is
//! self-contained and Chromium runs with background networking disabled).

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

/// Finds the Chromium binary: `$H2LAB_CHROMIUM`, else `chromium`, `chromium-browser`,
/// `google-chrome` or `google-chrome-stable` on `PATH`.
pub fn find_chromium() -> Option<PathBuf> {
    if let Some(p) = std::env::var_os("H2LAB_CHROMIUM") {
        let p = PathBuf::from(p);
        return p.is_file().then_some(p);
    }
    let path = std::env::var_os("PATH")?;
    for dir in std::env::split_paths(&path) {
        for name in [
            "chromium",
            "chromium-browser",
            "google-chrome",
            "google-chrome-stable",
        ] {
            let p = dir.join(name);
            if p.is_file() {
                return Some(p);
            }
        }
    }
    None
}

/// What rendering the report showed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RenderCheck {
    /// `svg.chart` elements in the DOM.
    pub charts: usize,
    /// Charts laid out at least 50×50 px.
    pub sized_charts: usize,
    /// Data marks (`.mark`) in the charts.
    pub marks: usize,
    /// Marks with a non-empty layout box.
    pub sized_marks: usize,
    /// Screenshot size.
    pub width: u32,
    /// Screenshot size.
    pub height: u32,
    /// Screenshot pixels that are not (near-)white or the page background.
    pub non_background_pixels: u64,
    /// Screenshot pixels close to each requested colour, in request order.
    pub color_pixels: Vec<u64>,
}

const PROBE: &str = "<script>(function(){var c=document.querySelectorAll('svg.chart'),\
s=0,m=0,sm=0;for(var i=0;i<c.length;i++){var r=c[i].getBoundingClientRect();\
if(r.width>=50&&r.height>=50)s++;var k=c[i].querySelectorAll('.mark');\
for(var j=0;j<k.length;j++){m++;var b=k[j].getBoundingClientRect();\
if(b.width>0||b.height>0)sm++;}}var p=document.createElement('pre');p.id='h2lab-check';\
p.textContent='H2LAB-CHECK '+c.length+' '+s+' '+m+' '+sm+' END';\
document.body.appendChild(p);})();</script>";

static SEQ: AtomicU64 = AtomicU64::new(0);

/// Runs Chromium with `args` (plus the standard headless flags) and a deadline.
fn chromium(
    bin: &Path,
    profile: &Path,
    args: &[String],
    deadline: Duration,
) -> Result<String, String> {
    let mut cmd = Command::new(bin);
    cmd.args([
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--disable-extensions",
        "--hide-scrollbars",
        "--force-device-scale-factor=1",
    ])
    .arg(format!("--user-data-dir={}", profile.display()))
    .args(args)
    .stdin(Stdio::null())
    .stdout(Stdio::piped())
    .stderr(Stdio::null());
    let mut child = cmd
        .spawn()
        .map_err(|e| format!("cannot run {}: {e}", bin.display()))?;
    let stdout = child.stdout.take();
    let reader = std::thread::spawn(move || {
        let mut s = String::new();
        if let Some(mut o) = stdout {
            let _ = std::io::Read::read_to_string(&mut o, &mut s);
        }
        s
    });
    let end = Instant::now() + deadline;
    loop {
        match child.try_wait() {
            Ok(Some(_)) => break,
            Ok(None) if Instant::now() >= end => {
                let _ = child.kill();
                let _ = child.wait();
                return Err(format!("chromium did not finish within {deadline:?}"));
            }
            Ok(None) => std::thread::sleep(Duration::from_millis(50)),
            Err(e) => return Err(format!("waiting for chromium: {e}")),
        }
    }
    reader
        .join()
        .map_err(|_| "chromium output reader panicked".to_owned())
}

fn parse_probe(dom: &str) -> Option<[usize; 4]> {
    let start = dom.rfind("H2LAB-CHECK ")? + "H2LAB-CHECK ".len();
    let end = start + dom[start..].find(" END")?;
    let v: Vec<usize> = dom[start..end]
        .split(' ')
        .filter_map(|x| x.parse().ok())
        .collect();
    (v.len() == 4).then(|| [v[0], v[1], v[2], v[3]])
}

fn hex_rgb(c: &str) -> Option<[u8; 3]> {
    let h = c.strip_prefix('#')?;
    if h.len() != 6 {
        return None;
    }
    let p = |i: usize| u8::from_str_radix(h.get(i..i + 2)?, 16).ok();
    Some([p(0)?, p(2)?, p(4)?])
}

/// Renders `index` (a report's `index.html`) and measures it; `colors` (`#rrggbb`) are
/// counted in the screenshot. The window is 1280 px wide and `height` px tall.
pub fn check(index: &Path, colors: &[&str], height: u32) -> Result<RenderCheck, String> {
    let bin = find_chromium().ok_or("chromium not found (apt-get install chromium)")?;
    let index = index
        .canonicalize()
        .map_err(|e| format!("{}: {e}", index.display()))?;
    let html = std::fs::read_to_string(&index).map_err(|e| format!("{}: {e}", index.display()))?;
    let dir = std::env::temp_dir().join(format!(
        "h2lab-check-{}-{}",
        std::process::id(),
        SEQ.fetch_add(1, Ordering::Relaxed)
    ));
    std::fs::create_dir_all(&dir).map_err(|e| format!("{}: {e}", dir.display()))?;
    let result = (|| {
        let probe = dir.join("probe.html");
        let with_probe = match html.rfind("</body>") {
            Some(i) => format!("{}{PROBE}{}", &html[..i], &html[i..]),
            None => format!("{html}{PROBE}"),
        };
        std::fs::write(&probe, with_probe).map_err(|e| format!("{}: {e}", probe.display()))?;
        let dom = chromium(
            &bin,
            &dir.join("profile-dom"),
            &[
                "--window-size=1280,1000".into(),
                "--dump-dom".into(),
                format!("file://{}", probe.display()),
            ],
            Duration::from_secs(90),
        )?;
        let [charts, sized_charts, marks, sized_marks] = parse_probe(&dom)
            .ok_or_else(|| format!("probe result missing from the DOM ({} bytes)", dom.len()))?;
        let shot = dir.join("shot.png");
        chromium(
            &bin,
            &dir.join("profile-shot"),
            &[
                format!("--window-size=1280,{height}"),
                format!("--screenshot={}", shot.display()),
                format!("file://{}", index.display()),
            ],
            Duration::from_secs(90),
        )?;
        let png = std::fs::read(&shot).map_err(|e| format!("no screenshot: {e}"))?;
        let (width, h, rgb) = decode_rgb(&png)?;
        let targets: Vec<Option<[u8; 3]>> = colors.iter().map(|c| hex_rgb(c)).collect();
        let mut non_bg = 0u64;
        let mut counts = vec![0u64; colors.len()];
        for px in rgb.chunks_exact(3) {
            if px.iter().any(|&v| v < 235) {
                non_bg += 1;
            }
            for (i, t) in targets.iter().enumerate() {
                if let Some(t) = t {
                    if px.iter().zip(t).all(|(a, b)| a.abs_diff(*b) <= 12) {
                        counts[i] += 1;
                    }
                }
            }
        }
        Ok(RenderCheck {
            charts,
            sized_charts,
            marks,
            sized_marks,
            width,
            height: h,
            non_background_pixels: non_bg,
            color_pixels: counts,
        })
    })();
    let _ = std::fs::remove_dir_all(&dir);
    result
}

/// Decodes a PNG into 8-bit RGB.
fn decode_rgb(png_bytes: &[u8]) -> Result<(u32, u32, Vec<u8>), String> {
    let mut dec = png::Decoder::new(Cursor::new(png_bytes));
    dec.set_transformations(png::Transformations::EXPAND | png::Transformations::STRIP_16);
    let mut reader = dec.read_info().map_err(|e| format!("bad PNG: {e}"))?;
    let size = reader.output_buffer_size().ok_or("PNG too large")?;
    let mut buf = vec![0u8; size];
    let info = reader
        .next_frame(&mut buf)
        .map_err(|e| format!("bad PNG: {e}"))?;
    buf.truncate(info.buffer_size());
    let rgb = match info.color_type {
        png::ColorType::Rgb => buf,
        png::ColorType::Rgba => buf
            .chunks_exact(4)
            .flat_map(|p| [p[0], p[1], p[2]])
            .collect(),
        png::ColorType::Grayscale => buf.iter().flat_map(|&g| [g, g, g]).collect(),
        png::ColorType::GrayscaleAlpha => buf
            .chunks_exact(2)
            .flat_map(|p| [p[0], p[0], p[0]])
            .collect(),
        png::ColorType::Indexed => return Err("indexed PNG after expansion".into()),
    };
    Ok((info.width, info.height, rgb))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probe_parsing() {
        assert_eq!(
            parse_probe("<pre id=\"h2lab-check\">H2LAB-CHECK 3 3 40 38 END</pre>"),
            Some([3, 3, 40, 38])
        );
        assert_eq!(parse_probe("nothing"), None);
        assert_eq!(hex_rgb("#d62728"), Some([0xd6, 0x27, 0x28]));
        assert_eq!(hex_rgb("red"), None);
    }
}
