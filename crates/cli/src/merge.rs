//! `h2lab merge`: the exact result of a sharded run from its shards' `--json` results.
//!
//! Prints the h2load-style report of the whole run (counters summed, latency statistics from
//! the merged HdrHistograms, req/s over the common window), writes the merged JSON, CSV and
//! time series, and evaluates `--threshold`s on the merged result. Inputs are result files, or
//! files of JSON lines such as the output of `kubectl logs` of the shards' pods (every line
//! that holds a result document counts; other lines are skipped).
//!
//! Exit status: 0; 99 when a threshold failed; 1 on errors (unreadable input, results of
//! different runs, a shard given twice, a shard missing without `--allow-partial`).

use std::fs;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use h2lab_report::json::{self, BenchJson};
use h2lab_report::shard::{list, merge_shards};
use h2lab_report::threshold::{self, Threshold, EXIT_THRESHOLD_FAILED};
use h2lab_report::timeseries::SeriesWriter;
use h2lab_report::{csv, text};

/// `h2lab merge` options.
#[derive(Debug, Clone, Args)]
pub struct MergeArgs {
    /// Shard results: `h2lab bench --shard i/N --json` files, or files of JSON lines (e.g.
    /// `kubectl logs` of the shards); '-' reads stdin.
    #[arg(value_name = "RESULT.json", required = true)]
    pub inputs: Vec<PathBuf>,

    /// Write the merged result as JSON to PATH ('-': one line on stdout).
    #[arg(long = "json", value_name = "PATH")]
    pub json: Option<PathBuf>,

    /// Write (or append) a one-row CSV of the merged result to PATH.
    #[arg(long = "csv", value_name = "PATH")]
    pub csv: Option<PathBuf>,

    /// Write the merged time series to PATH: CSV, or JSON lines for .jsonl/.ndjson.
    #[arg(long = "timeseries", value_name = "PATH")]
    pub timeseries: Option<PathBuf>,

    /// Pass/fail criterion on the merged result (repeatable, as for bench); any failure makes
    /// the exit status 99.
    #[arg(long = "threshold", value_name = "EXPR", value_parser = Threshold::parse)]
    pub thresholds: Vec<Threshold>,

    /// Merge the shards that are there when some are missing (and say which).
    #[arg(long = "allow-partial")]
    pub allow_partial: bool,
}

const PREFIX: &str = "h2lab merge: error:";

/// Reads the result documents of one input: the whole file, or each line holding one.
fn read_docs(path: &std::path::Path) -> Result<Vec<(String, BenchJson)>, String> {
    let name = path.display().to_string();
    let text = if path.as_os_str() == "-" {
        let mut t = String::new();
        std::io::Read::read_to_string(&mut std::io::stdin(), &mut t)
            .map_err(|e| format!("stdin: cannot read: {e}"))?;
        t
    } else {
        fs::read_to_string(path).map_err(|e| format!("{name}: cannot read: {e}"))?
    };
    if let Ok(doc) = json::parse(&text) {
        return Ok(vec![(name, doc)]);
    }
    let mut docs = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let line = line.trim();
        if !line.starts_with('{') || !line.contains("\"schema_version\"") {
            continue;
        }
        let doc = json::parse(line).map_err(|e| format!("{name}:{}: {e}", i + 1))?;
        docs.push((format!("{name}:{}", i + 1), doc));
    }
    if docs.is_empty() {
        return Err(format!("{name}: no h2lab result document in it"));
    }
    Ok(docs)
}

/// Runs `h2lab merge` and returns the process exit status.
pub fn main(args: MergeArgs) -> ExitCode {
    match run(&args) {
        Ok(code) => code,
        Err(msg) => {
            eprintln!("{PREFIX} {msg}");
            ExitCode::from(crate::bench::EXIT_FAILURE)
        }
    }
}

fn run(args: &MergeArgs) -> Result<ExitCode, String> {
    let mut docs = Vec::new();
    for p in &args.inputs {
        docs.extend(read_docs(p)?);
    }
    let mut m = merge_shards(&docs, args.allow_partial).map_err(|e| e.to_string())?;
    if !m.sharded.missing.is_empty() {
        eprintln!(
            "h2lab merge: warning: merged {} of {} shards; missing: {}",
            m.sharded.merged.len(),
            m.sharded.count,
            list(&m.sharded.missing)
        );
    }
    let verdicts = threshold::evaluate(&args.thresholds, &m.result);
    let mut out = format!(
        "merged {} shard(s) of {}; common window {:.3}s, starts spread over {:.3}s\n",
        m.sharded.merged.len(),
        m.sharded.count,
        m.result.elapsed.as_secs_f64(),
        m.sharded.start_spread_seconds
    );
    out.push_str(&text::summary(&m.result));
    out.push_str(&threshold::lines(&verdicts));
    print!("{out}");
    let mut status = 0;
    if verdicts.iter().any(|v| !v.passed) {
        status = EXIT_THRESHOLD_FAILED;
        m.doc.thresholds = Some(verdicts.iter().map(json::ThresholdJson::from).collect());
    } else if !verdicts.is_empty() {
        m.doc.thresholds = Some(verdicts.iter().map(json::ThresholdJson::from).collect());
    }
    if let Some(path) = &args.json {
        crate::bench::write_json(path, &m.doc)
            .map_err(|e| format!("--json {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.csv {
        csv::write(path, &m.result, &m.options)
            .map_err(|e| format!("--csv {}: {e}", path.display()))?;
    }
    if let Some(path) = &args.timeseries {
        let write = || -> std::io::Result<()> {
            let mut w = SeriesWriter::create(path)?;
            for r in &m.result.timeseries {
                w.write(r)?;
            }
            Ok(())
        };
        write().map_err(|e| format!("--timeseries {}: {e}", path.display()))?;
    }
    Ok(ExitCode::from(status))
}
