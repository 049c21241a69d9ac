//! Test helper: reads the anchor output captures in `testdata/anchors/captures/*.txt`
//! (command line, exit status, then `#===== STDOUT =====` / `#===== STDERR =====` sections).

pub(crate) const DIR: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/../../testdata/anchors/captures"
);

/// A capture's (stdout, stderr, exit status).
pub(crate) fn read(name: &str) -> (String, String, Option<i32>) {
    let text = std::fs::read_to_string(format!("{DIR}/{name}.txt")).unwrap();
    let exit = text
        .lines()
        .find_map(|l| l.strip_prefix("# exit status: "))
        .and_then(|v| v.trim().parse().ok());
    let section = |start: &str, end: &str| {
        let from = text
            .find(start)
            .map(|i| i + start.len() + 1)
            .unwrap_or(text.len());
        let to = text[from..]
            .find(end)
            .map(|i| i + from)
            .unwrap_or(text.len());
        text[from..to].to_string()
    };
    (
        section("#===== STDOUT =====", "#===== STDERR ====="),
        section("#===== STDERR =====", "#===== END ====="),
        exit,
    )
}
