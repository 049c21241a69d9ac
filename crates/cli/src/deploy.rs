//! `h2lab deploy kubernetes --shards N -- <bench args>`: renders the manifests that run a
//! benchmark as N exact shards on a Kubernetes cluster.
//!
//! - A ConfigMap holds the command line: one key per `bench` argument (`H2LAB_ARG_000`, …)
//!   and the common start time (`H2LAB_START_AT`); the pod gets them as environment variables
//!   and Kubernetes expands `$(H2LAB_ARG_000)` in the container's arguments, so the image needs
//!   no shell.
//! - An Indexed Job (`completionMode: Indexed`, `completions` = `parallelism` = N) runs
//!   `h2lab bench --shard auto/N --start-at … --json - <args>` in each pod: the index comes from
//!   `JOB_COMPLETION_INDEX`, the result is the last line of the pod's log.
//!   `backoffLimitPerIndex: 0` with `restartPolicy: Never`: a failed shard is not retried (a
//!   retry would start late and double-count). Pod anti-affinity puts each shard on its own
//!   node (`--colocate` makes it a preference). Requests: one CPU per worker thread of the
//!   largest shard (no CPU limit: CFS throttling would show up as latency) and memory from
//!   the connections of the largest shard (measured ~11 KiB per HTTP/2 connection at -m 10
//!   plus ~14 MiB; doubled), with the memory limit equal to the request.
//!
//! The three commands (render, apply, merge) are in the header comment of the output.

use std::time::{Duration, SystemTime};

use clap::{Args, Parser, Subcommand};
use serde_json::{json, Value};

use crate::args::BenchArgs;
use crate::shard::{self, parse_start_at};
use crate::values::parse_duration;
use crate::yaml::to_yaml;

/// `h2lab deploy` options.
#[derive(Debug, Clone, Args)]
pub struct DeployArgs {
    /// Where to deploy.
    #[command(subcommand)]
    pub target: DeployTarget,
}

/// Deployment targets.
#[derive(Debug, Clone, Subcommand)]
pub enum DeployTarget {
    /// Render a Kubernetes Indexed Job (and its ConfigMap) running the benchmark as shards.
    Kubernetes(KubernetesArgs),
}

/// `h2lab deploy kubernetes` options.
#[derive(Debug, Clone, Args)]
pub struct KubernetesArgs {
    /// Number of shards (pods), each on its own node.
    #[arg(long = "shards", value_name = "N", value_parser = clap::value_parser!(u32).range(1..=10_000))]
    pub shards: u32,

    /// Name of the Job and prefix of the ConfigMap.
    #[arg(long = "name", value_name = "NAME", default_value = "h2lab", value_parser = parse_name)]
    pub name: String,

    /// Namespace of the objects (the current one when omitted).
    #[arg(long = "namespace", value_name = "NS", value_parser = parse_name)]
    pub namespace: Option<String>,

    /// Container image with h2lab as /h2lab (see Containerfile).
    #[arg(long = "image", value_name = "IMAGE", default_value = DEFAULT_IMAGE)]
    pub image: String,

    /// Common start: this long after rendering [default: 60s]. Render right before applying.
    #[arg(long = "start-in", value_name = "DURATION", value_parser = parse_duration,
          conflicts_with = "start_at")]
    pub start_in: Option<Duration>,

    /// Common start at TIME (RFC 3339 or Unix seconds) instead of --start-in.
    #[arg(long = "start-at", value_name = "TIME", value_parser = parse_start_at)]
    pub start_at: Option<SystemTime>,

    /// Allow several shards on one node (anti-affinity becomes a preference).
    #[arg(long = "colocate")]
    pub colocate: bool,

    /// The `h2lab bench` arguments of the whole run (after `--`).
    #[arg(last = true, required = true, value_name = "BENCH ARGS")]
    pub bench: Vec<String>,
}

/// The image the manifests use by default.
pub const DEFAULT_IMAGE: &str = "ghcr.io/h2lab/h2lab:latest";

/// Default of `--start-in`.
const DEFAULT_START_IN: Duration = Duration::from_secs(60);

const PREFIX: &str = "h2lab deploy: error:";

/// A DNS-1123 label (Kubernetes object names of this kind).
fn parse_name(s: &str) -> Result<String, String> {
    let ok = !s.is_empty()
        && s.len() <= 52
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
        && !s.starts_with('-')
        && !s.ends_with('-');
    if ok {
        Ok(s.to_string())
    } else {
        Err(format!(
            "invalid name {s:?}: lower-case letters, digits and '-', at most 52 characters"
        ))
    }
}

/// Runs `h2lab deploy` and returns the process exit status.
pub fn main(args: DeployArgs) -> std::process::ExitCode {
    let DeployTarget::Kubernetes(k) = args.target;
    let start = k
        .start_at
        .unwrap_or_else(|| SystemTime::now() + k.start_in.unwrap_or(DEFAULT_START_IN));
    match render(&k, start) {
        Ok(text) => {
            print!("{text}");
            std::process::ExitCode::SUCCESS
        }
        Err(msg) => {
            eprintln!("{PREFIX} {msg}");
            std::process::ExitCode::from(crate::bench::EXIT_FAILURE)
        }
    }
}

/// What the renderer needs to know about the benchmark.
struct Sized {
    threads: u32,
    clients: u32,
}

/// The arguments of `h2lab bench` alone (what a deployment's `bench:` list holds).
#[derive(Parser)]
#[command(name = "h2lab bench", no_binary_name = true)]
struct BenchLine {
    #[command(flatten)]
    bench: BenchArgs,
}

/// Checks the bench arguments (every shard's slice must be valid) and sizes the largest shard.
fn check(k: &KubernetesArgs) -> Result<Sized, String> {
    for a in &k.bench {
        let flag = a.split('=').next().unwrap_or_default();
        if matches!(flag, "--shard" | "--start-at" | "--json") {
            return Err(format!(
                "{flag} is set by the manifests; leave it out of the bench arguments"
            ));
        }
    }
    let b = BenchLine::try_parse_from(&k.bench)
        .map_err(|e| {
            format!(
                "bench arguments: {}",
                e.to_string().lines().next().unwrap_or("invalid")
            )
        })?
        .bench;
    let whole = crate::bench::build_config(&b)?;
    let mut sized = Sized {
        threads: 1,
        clients: 1,
    };
    for i in 0..k.shards {
        let c = shard::slice(&whole, b.input_file.is_some(), i, k.shards)?;
        sized.threads = sized.threads.max(c.threads);
        sized.clients = sized.clients.max(c.clients);
    }
    Ok(sized)
}

/// Memory request of a shard with `clients` connections, MiB.
fn memory_mib(clients: u32) -> u64 {
    // Measured: ~14 MiB + ~11 KiB per HTTP/2 connection (-m 10); doubled for headroom.
    64 + (u64::from(clients) * 32).div_ceil(1024)
}

/// The manifests (ConfigMap and Job) as one multi-document YAML text with a header comment.
pub fn render(k: &KubernetesArgs, start: SystemTime) -> Result<String, String> {
    let [cm, job] = manifests(k, start)?;
    let name = &k.name;
    let ns = k
        .namespace
        .as_ref()
        .map(|n| format!(" -n {n}"))
        .unwrap_or_default();
    let n = k.shards;
    let cmdline = shell_words(&k.bench);
    let mut out = format!(
        "# h2lab: {n} shard(s) of: h2lab bench {cmdline}\n\
         # Rendered by: h2lab deploy kubernetes --shards {n} -- {cmdline}\n\
         # 1. render:  h2lab deploy kubernetes --shards {n} -- ... > {name}.yaml\n\
         # 2. apply:   kubectl apply{ns} -f {name}.yaml\n\
         # 3. merge:   kubectl wait{ns} --for=condition=complete --timeout=1h job/{name} && \\\n\
         #             kubectl logs{ns} -l job-name={name} --tail=-1 --max-log-requests={n} > {name}-shards.jsonl && \\\n\
         #             h2lab merge {name}-shards.jsonl\n\
         # The shards start together at H2LAB_START_AT; render right before applying.\n"
    );
    out.push_str("---\n");
    out.push_str(&to_yaml(&cm));
    out.push_str("---\n");
    out.push_str(&to_yaml(&job));
    Ok(out)
}

/// Quotes arguments for the header comment (display only).
fn shell_words(args: &[String]) -> String {
    args.iter()
        .map(|a| {
            if !a.is_empty()
                && a.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"-_./:=,@%+".contains(&b))
            {
                a.clone()
            } else {
                format!("'{}'", a.replace('\'', "'\\''"))
            }
        })
        .collect::<Vec<_>>()
        .join(" ")
        .replace('\n', " ")
}

/// The ConfigMap and the Job as JSON values (what the YAML is written from; the tests validate
/// them against the Kubernetes API schema).
pub fn manifests(k: &KubernetesArgs, start: SystemTime) -> Result<[Value; 2], String> {
    let sized = check(k)?;
    let n = k.shards;
    let name = &k.name;
    let cm_name = format!("{name}-args");
    let labels = json!({
        "app.kubernetes.io/name": "h2lab",
        "app.kubernetes.io/instance": name,
    });
    let mut metadata = json!({"name": cm_name, "labels": labels});
    if let Some(ns) = &k.namespace {
        metadata["namespace"] = json!(ns);
    }
    let mut data = serde_json::Map::new();
    data.insert(
        "H2LAB_START_AT".into(),
        json!(format!("{:.3}", shard::unix_seconds(start))),
    );
    let mut container_args = vec![
        json!("bench"),
        json!("--shard"),
        json!(format!("auto/{n}")),
        json!("--start-at"),
        json!("$(H2LAB_START_AT)"),
        json!("--json"),
        json!("-"),
    ];
    for (i, a) in k.bench.iter().enumerate() {
        let key = format!("H2LAB_ARG_{i:03}");
        // Values from the environment are substituted once, as they are (no re-expansion).
        data.insert(key.clone(), json!(a));
        container_args.push(json!(format!("$({key})")));
    }
    let cm = json!({
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": metadata,
        "data": data,
    });
    let mut job_meta = json!({"name": name, "labels": labels});
    if let Some(ns) = &k.namespace {
        job_meta["namespace"] = json!(ns);
    }
    let term = json!({
        "labelSelector": {"matchLabels": {"app.kubernetes.io/instance": name}},
        "topologyKey": "kubernetes.io/hostname",
    });
    let anti = if k.colocate {
        json!({"preferredDuringSchedulingIgnoredDuringExecution": [
            {"weight": 100, "podAffinityTerm": term}
        ]})
    } else {
        json!({"requiredDuringSchedulingIgnoredDuringExecution": [term]})
    };
    let memory = format!("{}Mi", memory_mib(sized.clients));
    let job = json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": job_meta,
        "spec": {
            "completionMode": "Indexed",
            "completions": n,
            "parallelism": n,
            "backoffLimitPerIndex": 0,
            "template": {
                "metadata": {"labels": labels},
                "spec": {
                    "restartPolicy": "Never",
                    "affinity": {"podAntiAffinity": anti},
                    "containers": [{
                        "name": "h2lab",
                        "image": k.image,
                        "command": ["/h2lab"],
                        "args": container_args,
                        "envFrom": [{"configMapRef": {"name": cm_name}}],
                        "resources": {
                            "requests": {"cpu": sized.threads.to_string(), "memory": memory},
                            "limits": {"memory": memory},
                        },
                    }],
                },
            },
        },
    });
    Ok([cm, job])
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(extra: &[&str]) -> KubernetesArgs {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            k: KubernetesArgs,
        }
        let argv = ["t"].iter().chain(extra).map(|s| s.to_string());
        T::try_parse_from(argv).unwrap().k
    }

    #[test]
    fn bench_arguments_are_checked_before_rendering() {
        let start = std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let ok = args(&[
            "--shards",
            "3",
            "--",
            "-c",
            "30",
            "-t",
            "2",
            "-D",
            "10",
            "http://h/",
        ]);
        let [cm, job] = manifests(&ok, start).unwrap();
        assert_eq!(cm["data"]["H2LAB_START_AT"], "1800000000.000");
        assert_eq!(cm["data"]["H2LAB_ARG_004"], "-D");
        assert_eq!(job["spec"]["completions"], 3);
        let c = &job["spec"]["template"]["spec"]["containers"][0];
        assert_eq!(c["args"][2], "auto/3");
        assert_eq!(c["args"][7], "$(H2LAB_ARG_000)");
        assert_eq!(c["resources"]["requests"]["cpu"], "2");
        let bad: &[&[&str]] = &[
            &["--shards", "3", "--", "-c", "2", "http://h/"],
            &["--shards", "2", "--", "--shard", "0/2", "http://h/"],
            &["--shards", "2", "--", "--json=x", "http://h/"],
            &["--shards", "2", "--", "--bogus", "http://h/"],
        ];
        for b in bad {
            let e = manifests(&args(b), start).unwrap_err();
            assert!(!e.contains('\n'), "{e}");
        }
        assert!(parse_name("H2lab").is_err());
        assert!(parse_name("-x").is_err());
        assert_eq!(memory_mib(1000), 64 + 32);
        assert_eq!(
            shell_words(&["-H".into(), "a: b".into(), "x'y".into()]),
            "-H 'a: b' 'x'\\''y'"
        );
    }
}

/// The rendered manifests validate against the Kubernetes API schema (v1.32, strict: unknown
/// fields are errors) of the kinds used, vendored under `testdata/kubernetes-json-schema/`.
#[cfg(test)]
mod schema_tests {
    use super::*;
    use std::path::Path;

    fn validator(file: &str) -> jsonschema::Validator {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../testdata/kubernetes-json-schema/v1.32.0-standalone-strict")
            .join(file);
        let text = std::fs::read_to_string(&path).unwrap();
        let schema: Value = serde_json::from_str(&text).unwrap();
        jsonschema::draft4::new(&schema).unwrap()
    }

    fn errors(v: &jsonschema::Validator, doc: &Value) -> Vec<String> {
        v.iter_errors(doc)
            .map(|e| format!("{e} at {}", e.instance_path()))
            .collect()
    }

    #[test]
    fn rendered_manifests_validate_against_the_kubernetes_schema() {
        let job_schema = validator("job-batch-v1.json");
        let cm_schema = validator("configmap-v1.json");
        let start = std::time::UNIX_EPOCH + Duration::from_secs(1_800_000_000);
        let cases: &[&[&str]] = &[
            &[
                "--shards",
                "4",
                "--",
                "-n",
                "100000",
                "-c",
                "100",
                "-m",
                "10",
                "http://h/",
            ],
            &[
                "--shards",
                "2",
                "--name",
                "load-1",
                "--namespace",
                "perf",
                "--colocate",
                "--image",
                "registry.local/h2lab:1",
                "--",
                "--arrival-rate",
                "0",
                "--stages",
                "30s:1000,1m:1000",
                "-c",
                "64",
                "-t",
                "4",
                "--threshold",
                "p99<50ms",
                "https://h:8443/",
            ],
        ];
        for argv in cases {
            let k = args_of(argv);
            let [cm, job] = manifests(&k, start).unwrap();
            assert_eq!(errors(&cm_schema, &cm), Vec::<String>::new(), "{argv:?}");
            assert_eq!(errors(&job_schema, &job), Vec::<String>::new(), "{argv:?}");
            let spec = &job["spec"];
            assert_eq!(spec["completionMode"], "Indexed");
            assert_eq!(spec["completions"], spec["parallelism"]);
            assert_eq!(spec["backoffLimitPerIndex"], 0);
            assert_eq!(spec["template"]["spec"]["restartPolicy"], "Never");
        }
        // The schema is strict: a misspelt field or a wrong type is caught.
        let [_, mut job] = manifests(&args_of(cases[0]), start).unwrap();
        job["spec"]["completionsMode"] = json!("Indexed");
        assert!(!errors(&job_schema, &job).is_empty());
        let [_, mut job] = manifests(&args_of(cases[0]), start).unwrap();
        job["spec"]["parallelism"] = json!("4");
        assert!(!errors(&job_schema, &job).is_empty());
    }

    fn args_of(extra: &[&str]) -> KubernetesArgs {
        #[derive(Parser)]
        struct T {
            #[command(flatten)]
            k: KubernetesArgs,
        }
        let argv = ["t"].iter().chain(extra).map(|s| s.to_string());
        T::try_parse_from(argv).unwrap().k
    }

    /// `deploy/kubernetes/h2lab.yaml` is what the command renders for its documented example.
    #[test]
    fn the_example_manifest_in_the_repository_is_current() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../deploy/kubernetes/h2lab.yaml");
        let k = args_of(&EXAMPLE);
        let start = parse_start_at(EXAMPLE_START).unwrap();
        let want = render(&k, start).unwrap();
        let have = std::fs::read_to_string(&path).unwrap_or_default();
        assert!(
            have == want,
            "{} is stale; regenerate it with: h2lab deploy kubernetes {}",
            path.display(),
            EXAMPLE.join(" ")
        );
    }

    const EXAMPLE_START: &str = "2026-01-01T12:00:00Z";
    const EXAMPLE: [&str; 16] = [
        "--shards",
        "4",
        "--start-at",
        EXAMPLE_START,
        "--",
        "-D",
        "60s",
        "-c",
        "400",
        "-m",
        "10",
        "-t",
        "2",
        "--warm-up-time",
        "5s",
        "https://target.example/",
    ];
}
