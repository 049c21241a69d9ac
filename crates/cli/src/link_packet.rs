//! `h2lab link --packet [-- CMD ...]`: packet mode in the foreground. Creates the emulated path
//! (two network namespaces joined by the link thread; `h2lab_link::packet`), starts
//! `h2lab serve` in-process on the server side (or `--server-cmd` there), prints the
//! addresses, runs CMD on the client side with them in its environment, and prints the path's
//! counters when CMD exits or on SIGINT/SIGTERM.
//!
//! Exit status: CMD's (1 if it was killed by a signal); without CMD, 0 after a signal; 1 on
//! usage errors or when the path cannot be created.

use std::net::SocketAddr;
use std::process::{Child, Command, ExitCode};
use std::time::Duration;

use h2lab_engine::StopFlag;
use h2lab_link::packet::{
    prepare_privileges, LossModel, PacketConfig, PacketLink, Side, SERVER_ADDR,
};
use h2lab_server::{RunningServer, ServerConfig};

use crate::compare::EXIT_FAILURE;
use crate::link::LinkArgs;

const PREFIX: &str = "h2lab link: error:";

/// The built-in server's ports on the server side.
const HTTP_PORT: u16 = 8080;
const TLS_PORT: u16 = 8443;

fn fail(msg: impl std::fmt::Display) -> ExitCode {
    eprintln!("{PREFIX} {msg}");
    ExitCode::from(EXIT_FAILURE)
}

/// The packet path's shape from the flags.
fn packet_config(a: &LinkArgs) -> Result<PacketConfig, String> {
    let cfg = crate::link::flags(a)
        .to_config()
        .map_err(|e| e.to_string())?;
    let mut p = PacketConfig::from_link(&cfg);
    p.congestion_control = a.cc.clone();
    if let Some(burst) = a.loss_burst {
        if burst.is_nan() || burst < 1.0 || cfg.loss <= 0.0 {
            return Err("--loss-burst needs a burst of at least 1 packet and a --loss".into());
        }
        // Mean burst 1/r packets; mean loss p / (p + r) = --loss.
        let r = 1.0 / burst;
        let model = LossModel::GilbertElliott {
            p: cfg.loss * r / (1.0 - cfg.loss),
            r,
            loss_good: 0.0,
            loss_bad: 1.0,
        };
        p.up.loss = model;
        p.down.loss = model;
    }
    for d in [&mut p.up, &mut p.down] {
        d.reorder = a.reorder;
    }
    Ok(p)
}

/// `h2lab serve` on the server side: h2c and HTTP/1.1 on 8080, TLS (h2, HTTP/1.1) and HTTP/3
/// on 8443 with a self-signed certificate.
fn builtin_server(link: &PacketLink) -> Result<RunningServer, String> {
    let handle = link
        .spawn_in(Side::Server, || {
            h2lab_server::spawn(ServerConfig {
                listen: Some(SocketAddr::from((SERVER_ADDR, HTTP_PORT))),
                tls_listen: Some(SocketAddr::from((SERVER_ADDR, TLS_PORT))),
                h3: true,
                quiet: true,
                ..ServerConfig::default()
            })
        })
        .map_err(|e| e.to_string())?;
    let joined = handle.join().map_err(|_| "the server thread panicked")?;
    joined.map_err(|e| e.to_string())
}

/// Before a lab command starts any thread: in packet mode, enters a user namespace when not
/// root (packet mode then works unprivileged) and, there, a private network namespace the
/// lab's threads can return to from a path's client side (only with the built-in servers:
/// `builtin`; an external target needs the host's network and gets the relay). A failure is
/// reported later, once, by the lab's fallback to the relay.
pub fn privileges_for(mode: h2lab_lab::netpath::PathMode, builtin: bool) {
    if mode != h2lab_lab::netpath::PathMode::Packet {
        return;
    }
    if matches!(
        prepare_privileges(),
        Ok(h2lab_link::packet::Privilege::UserNamespace)
    ) && builtin
    {
        let _ = h2lab_link::packet::private_home();
    }
}

/// Runs `h2lab link --packet` and returns the exit status.
pub fn main(a: LinkArgs) -> ExitCode {
    // Before any thread starts: a user namespace can only be entered by a single thread.
    if let Err(e) = prepare_privileges() {
        return fail(e);
    }
    let config = match packet_config(&a) {
        Ok(c) => c,
        Err(e) => return fail(e),
    };
    let link = match PacketLink::start(config) {
        Ok(l) => l,
        Err(e) => return fail(e),
    };
    // Before anything is printed: whoever reads the path's lines may signal at once.
    let stop = StopFlag::new();
    if let Err(e) = crate::signals::stop_on_signals(&stop) {
        return fail(format!("cannot install signal handlers: {e}"));
    }
    let info = link.info().clone();
    println!(
        "h2lab link: path {}",
        h2lab_link::PathKind::Packet.describe()
    );
    for (name, side) in [("client", &info.client), ("server", &info.server)] {
        println!(
            "h2lab link: {name} {} (TCP congestion control {}, netns net:[{}])",
            side.addr, side.congestion_control, side.netns_inode
        );
    }
    let (server, mut server_child) = match &a.server_cmd {
        Some(cmd) => {
            let mut c = Command::new("sh");
            c.arg("-c").arg(cmd);
            // Its own process group: ending it ends what the shell started too.
            std::os::unix::process::CommandExt::process_group(&mut c, 0);
            link.command(Side::Server, &mut c);
            match c.spawn() {
                Ok(child) => (None, Some(child)),
                Err(e) => return fail(format!("cannot run --server-cmd: {e}")),
            }
        }
        None => match builtin_server(&link) {
            Ok(s) => (Some(s), None),
            Err(e) => return fail(format!("cannot start the server: {e}")),
        },
    };
    let url = format!("http://{SERVER_ADDR}:{HTTP_PORT}/");
    let tls_url = format!("https://{SERVER_ADDR}:{TLS_PORT}/");
    if server.is_some() {
        println!(
            "h2lab link: server {url} (h2c, HTTP/1.1), {tls_url} (h2, HTTP/1.1, h3; self-signed)"
        );
    }
    let mut child = None;
    if let Some((prog, args)) = a.command.split_first() {
        let mut c = Command::new(prog);
        c.args(args);
        if server.is_some() {
            c.env("H2LAB_URL", &url).env("H2LAB_TLS_URL", &tls_url);
        }
        link.command(Side::Client, &mut c);
        match c.spawn() {
            Ok(ch) => child = Some(ch),
            Err(e) => return fail(format!("cannot run {prog}: {e}")),
        }
    }
    let status = wait(&stop, child.as_mut());
    if let Some(c) = server_child.as_mut() {
        h2lab_link::packet::end_process_group(c);
    }
    drop(server);
    let stats = link.stats();
    if let Err(e) = link.stop() {
        eprintln!("{PREFIX} {e}");
    }
    println!("{stats}");
    status
}

/// Waits for the command to exit (its status) or for a signal (then ends it).
fn wait(stop: &StopFlag, mut child: Option<&mut Child>) -> ExitCode {
    loop {
        if let Some(c) = child.as_deref_mut() {
            match c.try_wait() {
                Ok(Some(st)) => {
                    return match st.code() {
                        Some(code) => ExitCode::from(code.clamp(0, 255) as u8),
                        None => ExitCode::from(EXIT_FAILURE),
                    };
                }
                Ok(None) => {}
                Err(_) => return ExitCode::from(EXIT_FAILURE),
            }
        }
        if stop.is_stopped() {
            if let Some(c) = child {
                end(c);
            }
            return ExitCode::SUCCESS;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
}

/// Ends a child we started: SIGKILL by its pid, then reaps it.
fn end(c: &mut Child) {
    let _ = c.kill();
    let _ = c.wait();
}
