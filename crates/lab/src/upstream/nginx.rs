//! nginx as the proxy of the upstream experiment: the seed's server blocks (one per arm, on
//! ports chosen at run time) in one configuration, one worker, started in the foreground
//! and stopped when dropped.

use std::fmt::Write as _;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use h2lab_proxy::UpstreamProtocol;

/// `nginx -v` as `nginx/1.22.1`, if nginx is installed.
pub fn version() -> Option<String> {
    let out = Command::new("nginx").arg("-v").output().ok()?;
    let text = String::from_utf8_lossy(&out.stderr);
    text.split_whitespace()
        .find(|w| w.starts_with("nginx/"))
        .map(str::to_string)
}

/// Whether this nginx has `proxy_http_version 2` (1.29.4 and later).
pub fn has_h2_upstream(v: &str) -> bool {
    let nums: Vec<u32> = v
        .trim_start_matches("nginx/")
        .split('.')
        .filter_map(|p| p.parse().ok())
        .collect();
    nums.as_slice() >= [1, 29, 4].as_slice()
}

/// The `upstream` and `server` blocks of one arm (`{PORT}` is filled in later), or why
/// nginx cannot run it.
pub fn arm_block(
    arm: UpstreamProtocol,
    backends: &[SocketAddr],
    keepalive: usize,
) -> Result<String, String> {
    let v = version().ok_or("nginx is not installed")?;
    let name = arm.name().replace(['.', '-'], "_");
    let mut up = format!("    upstream backend_{name} {{\n");
    for b in backends {
        let _ = writeln!(up, "        server {b};");
    }
    let (version, extra, ka) = match arm {
        UpstreamProtocol::H1 => (
            "1.1",
            "            proxy_set_header Connection \"\";\n",
            true,
        ),
        UpstreamProtocol::H10 => ("1.0", "", false),
        UpstreamProtocol::H2c if has_h2_upstream(&v) => ("2", "", true),
        UpstreamProtocol::H2c => {
            return Err(format!(
                "not supported by {v} (no HTTP/2 upstream before 1.29.4)"
            ))
        }
        UpstreamProtocol::H2cMux => {
            return Err(format!(
                "not supported by {v} (no upstream multiplexing in any nginx)"
            ))
        }
    };
    if ka {
        let _ = writeln!(up, "        keepalive {keepalive};\n        keepalive_requests 100000;\n        keepalive_timeout 60s;");
    }
    up.push_str("    }\n");
    let _ = write!(
        up,
        "    server {{\n        listen 127.0.0.1:{{PORT}};\n        location / {{\n            proxy_pass http://backend_{name};\n            proxy_http_version {version};\n{extra}            proxy_set_header Host $host;\n            proxy_set_header X-Real-IP $remote_addr;\n            proxy_set_header X-Forwarded-For $proxy_add_x_forwarded_for;\n            proxy_set_header X-Forwarded-Proto $scheme;\n            proxy_buffering on;\n            proxy_buffer_size 16k;\n            proxy_buffers 8 32k;\n        }}\n    }}\n"
    );
    Ok(up)
}

/// The configuration being assembled.
#[derive(Default)]
pub struct Config {
    blocks: Vec<String>,
}

impl Config {
    /// Adds an arm's blocks on a free port; returns the port.
    pub fn add(&mut self, block: String) -> std::io::Result<u16> {
        let port = std::net::TcpListener::bind("127.0.0.1:0")?
            .local_addr()?
            .port();
        self.blocks.push(block.replace("{PORT}", &port.to_string()));
        Ok(port)
    }

    /// Writes the configuration and starts nginx; waits until every port accepts.
    pub fn start(self) -> Result<Nginx, String> {
        let dir = std::env::temp_dir().join(format!("h2lab-upstream-nginx-{}", std::process::id()));
        std::fs::create_dir_all(dir.join("logs")).map_err(|e| e.to_string())?;
        let conf = format!(
            "worker_processes 1;\nerror_log {d}/logs/error.log warn;\npid {d}/nginx.pid;\nevents {{ worker_connections 4096; }}\nhttp {{\n    access_log off;\n    keepalive_timeout 65;\n    keepalive_requests 100000;\n    gzip off;\n    client_body_temp_path {d}/body;\n    proxy_temp_path {d}/proxy;\n    fastcgi_temp_path {d}/fastcgi;\n    uwsgi_temp_path {d}/uwsgi;\n    scgi_temp_path {d}/scgi;\n{}}}\n",
            self.blocks.join(""),
            d = dir.display()
        );
        let path = dir.join("nginx.conf");
        std::fs::write(&path, conf).map_err(|e| e.to_string())?;
        let child = Command::new("nginx")
            .args([
                "-p",
                &dir.display().to_string(),
                "-c",
                &path.display().to_string(),
                "-g",
                "daemon off;",
            ])
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| format!("starting nginx: {e}"))?;
        let mut n = Nginx { child, dir };
        let ports: Vec<u16> = self
            .blocks
            .iter()
            .filter_map(|b| {
                b.split("listen 127.0.0.1:")
                    .nth(1)?
                    .split(';')
                    .next()?
                    .parse()
                    .ok()
            })
            .collect();
        let deadline = Instant::now() + Duration::from_secs(10);
        for p in ports {
            while std::net::TcpStream::connect(("127.0.0.1", p)).is_err() {
                if Instant::now() > deadline || n.child.try_wait().ok().flatten().is_some() {
                    return Err("nginx did not start (see its error log)".into());
                }
                std::thread::sleep(Duration::from_millis(20));
            }
        }
        Ok(n)
    }
}

/// A running nginx; dropping it stops it.
pub struct Nginx {
    child: Child,
    dir: PathBuf,
}

impl Drop for Nginx {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn versions() {
        assert!(!has_h2_upstream("nginx/1.22.1"));
        assert!(has_h2_upstream("nginx/1.29.4"));
        assert!(has_h2_upstream("nginx/1.30.0"));
    }
}
