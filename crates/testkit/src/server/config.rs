//! Each anchor's command line and configuration file, from the templates in
//! `testdata/anchors/configs`.

use std::fs;
use std::path::{Path, PathBuf};
use std::process::Command;

use super::builder::AnchorBuilder;
use super::kind::AnchorKind;
use super::layout::{port_of, Layout};
use crate::cert::CertFiles;
use crate::Error;

const NGINX_TEMPLATE: &str =
    include_str!("../../../../testdata/anchors/configs/nginx.conf.template");
const H2O_TEMPLATE: &str = include_str!("../../../../testdata/anchors/configs/h2o.conf.template");
const APACHE2_TEMPLATE: &str =
    include_str!("../../../../testdata/anchors/configs/apache2.conf.template");

impl AnchorBuilder {
    pub(super) fn command(
        &self,
        binary: &Path,
        prefix: &Path,
        docroot: &Path,
        l: &Layout,
        cert: Option<&CertFiles>,
    ) -> Result<Command, Error> {
        let mut cmd = Command::new(binary);
        let p = prefix.display().to_string();
        let www = docroot.display().to_string();
        let (cert_s, key_s) = match cert {
            Some(c) => (c.cert.display().to_string(), c.key.display().to_string()),
            None => (String::new(), String::new()),
        };
        match self.kind {
            AnchorKind::NghttpdH2c | AnchorKind::NghttpdTls => {
                cmd.arg("--address=127.0.0.1").arg("-d").arg(docroot);
                if let Some(n) = self.max_concurrent_streams {
                    cmd.arg(format!("--max-concurrent-streams={n}"));
                }
                cmd.arg(format!("--workers={}", self.workers));
                if self.kind == AnchorKind::NghttpdH2c {
                    cmd.arg("--no-tls").arg(port_of(l.h2c).to_string());
                } else {
                    cmd.arg(port_of(l.tls).to_string()).arg(&key_s).arg(&cert_s);
                }
            }
            AnchorKind::Nginx => {
                let sock = l.unix_h1.as_ref().map(|s| s.display().to_string());
                let sock = sock.unwrap_or_default();
                let mut conf = NGINX_TEMPLATE
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_H1@", &port_of(l.h1).to_string())
                    .replace("@PORT_H2C@", &port_of(l.h2c).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s)
                    .replace("@SOCK@", &sock);
                if self.workers > 1 {
                    conf = replace_once(&conf, "master_process off;", "master_process on;")?;
                    conf = replace_once(
                        &conf,
                        "worker_processes 1;",
                        &format!("worker_processes {};", self.workers),
                    )?;
                }
                if let Some(n) = self.max_concurrent_streams {
                    conf = replace_once(
                        &conf,
                        "access_log off;",
                        &format!("access_log off;\n    http2_max_concurrent_streams {n};"),
                    )?;
                }
                fs::create_dir_all(prefix.join("tmp"))
                    .map_err(|e| Error::io("create nginx tmp dir", e))?;
                for s in [&l.unix_h1, &l.unix_h2c].into_iter().flatten() {
                    let _ = fs::remove_file(s); // nginx does not unlink stale sockets
                }
                let conf_path = write_conf(prefix, "nginx.conf", &conf)?;
                cmd.arg("-c").arg(conf_path).arg("-p").arg(prefix);
                cmd.args(["-e", "stderr"]);
            }
            AnchorKind::H2o => {
                let mut conf = H2O_TEMPLATE
                    .replace("@USER@", &current_user())
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_PLAIN@", &port_of(l.h1).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s);
                conf = replace_once(
                    &conf,
                    "num-threads: 1",
                    &format!("num-threads: {}", self.workers),
                )?;
                if self.max_concurrent_streams.is_some() {
                    // h2o 2.2 always announces SETTINGS_MAX_CONCURRENT_STREAMS 100;
                    // `http2-max-concurrent-requests-per-connection` only limits how many
                    // streams it processes at once, which is not what callers ask for.
                    return Err(Error::Unsupported(
                        "h2o 2.2 cannot change the SETTINGS_MAX_CONCURRENT_STREAMS it announces"
                            .to_string(),
                    ));
                }
                let conf_path = write_conf(prefix, "h2o.conf", &conf)?;
                cmd.arg("-c").arg(conf_path);
            }
            AnchorKind::Apache2 => {
                let mut conf = APACHE2_TEMPLATE
                    .replace("@PREFIX@", &p)
                    .replace("@DOCROOT@", &www)
                    .replace("@PORT_PLAIN@", &port_of(l.h1).to_string())
                    .replace("@PORT_TLS@", &port_of(l.tls).to_string())
                    .replace("@CERT@", &cert_s)
                    .replace("@KEY@", &key_s);
                if self.workers > 1 {
                    let w = self.workers;
                    conf = replace_once(&conf, "StartServers 1", &format!("StartServers {w}"))?;
                    conf = replace_once(&conf, "ServerLimit 1", &format!("ServerLimit {w}"))?;
                    conf = replace_once(
                        &conf,
                        "MaxRequestWorkers 25",
                        &format!("MaxRequestWorkers {}", 25 * w),
                    )?;
                }
                if let Some(n) = self.max_concurrent_streams {
                    conf = replace_once(
                        &conf,
                        "H2MaxSessionStreams 100",
                        &format!("H2MaxSessionStreams {n}"),
                    )?;
                }
                let conf_path = write_conf(prefix, "apache2.conf", &conf)?;
                cmd.arg("-f").arg(conf_path).arg("-DFOREGROUND");
            }
        }
        Ok(cmd)
    }
}

fn replace_once(text: &str, needle: &str, with: &str) -> Result<String, Error> {
    match text.matches(needle).count() {
        1 => Ok(text.replacen(needle, with, 1)),
        n => Err(Error::Unsupported(format!(
            "config template changed: expected `{needle}` once, found it {n} times"
        ))),
    }
}

fn write_conf(prefix: &Path, name: &str, text: &str) -> Result<PathBuf, Error> {
    let path = prefix.join(name);
    fs::write(&path, text).map_err(|e| Error::io(format!("write {}", path.display()), e))?;
    Ok(path)
}

fn current_user() -> String {
    if let Ok(out) = Command::new("id").arg("-un").output() {
        let name = String::from_utf8_lossy(&out.stdout).trim().to_string();
        if out.status.success() && !name.is_empty() {
            return name;
        }
    }
    std::env::var("USER").unwrap_or_else(|_| "root".to_string())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn templates_have_the_lines_the_builder_edits() {
        for (t, needles) in [
            (
                NGINX_TEMPLATE,
                &[
                    "master_process off;",
                    "worker_processes 1;",
                    "access_log off;",
                ][..],
            ),
            (H2O_TEMPLATE, &["num-threads: 1"][..]),
            (
                APACHE2_TEMPLATE,
                &[
                    "StartServers 1",
                    "ServerLimit 1",
                    "MaxRequestWorkers 25",
                    "H2MaxSessionStreams 100",
                ][..],
            ),
        ] {
            for n in needles {
                assert!(replace_once(t, n, "x").is_ok(), "{n:?}");
            }
        }
    }
}
