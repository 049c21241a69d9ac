//! One page of the render experiment on one link: the anchors started on the server side,
//! the arms' pools, the rounds of cold loads alternated across the arms (on the client side),
//! and per arm its times and what the path counted during its loads.

use super::path::{self, LinkPath, Reach};
use super::{
    pool, render_ms, verdict, Arm, ArmResult, RenderConfig, RenderLink, RenderLinkResult, Server,
};
use crate::error::LabError;
use crate::netpath::PathCounters;
use crate::page::anchor;
use crate::page::load::{self, PoolSpec};
use crate::proto::LabProtocol;
use crate::stats::MedianSpread;
use h2lab_engine::priority::render_blocking;

/// One page on one link: the built-in servers (priorities on, off, pushing) and how they
/// are reached.
pub(super) struct Page<'a> {
    pub(super) link: &'a RenderLink,
    pub(super) path: &'a LinkPath,
    pub(super) servers: &'a [Server; 3],
    pub(super) reach: &'a [Reach],
    pub(super) name: &'a str,
    pub(super) query: &'a str,
}

/// An arm ready to load: its pool, the paths it loads and how its server is reached.
type ArmPool<'a> = (Arm, PoolSpec, &'a [String], &'a Reach);

impl Page<'_> {
    /// Loads the page in every arm and decides between them.
    pub(super) fn run(
        &self,
        cfg: &RenderConfig,
        repeat: u32,
        log: &mut dyn FnMut(&str),
    ) -> Result<RenderLinkResult, LabError> {
        let (rl, lp) = (self.link, self.path);
        let [on, off, pushing] = self.servers;
        let html_path = format!("/page?{}", self.query);
        let first = pool(LabProtocol::H1Tls, on.tls, &self.reach[0], cfg.timeout);
        let found = {
            let _side = lp.client_side()?;
            load::discover(&first, &html_path).map_err(LabError::from)?
        };
        let mut paths = vec![html_path.clone()];
        paths.extend(found.paths.iter().cloned());
        let mut ng_paths = vec![anchor::PAGE_FILE.to_owned()];
        ng_paths.extend(found.paths.iter().cloned());
        let anchors = lp.on_server_side(|site| {
            let mut out = Vec::new();
            if let Some(bin) = anchor::nghttpd_path() {
                for (arm, push) in [(Arm::Nghttpd, false), (Arm::NghttpdPush, true)] {
                    let tag = format!("{}-{}", self.name, if push { "push" } else { "nopush" });
                    match anchor::start(&bin, &on.dir, self.query, &found.paths, &tag, push, site) {
                        Ok(n) => out.push((arm, push, n)),
                        Err(e) => log(&format!("{} arm skipped: {e}", arm.label())),
                    }
                }
            }
            if let Some(bin) = anchor::h2o_path() {
                match anchor::start_h2o(&bin, &on.dir, self.query, &found.paths, self.name, site) {
                    Ok(n) => out.push((Arm::H2o, false, n)),
                    Err(e) => log(&format!("{} arm skipped: {e}", Arm::H2o.label())),
                }
            }
            out
        })?;
        let ng_reach = anchors
            .iter()
            .map(|(_, _, n)| lp.reach(n.addr, None))
            .collect::<Result<Vec<_>, _>>()?;
        let h2 = |s: &Server, r| pool(LabProtocol::H2, s.tls, r, cfg.timeout);
        let mut pools: Vec<ArmPool<'_>> = vec![
            (Arm::H1x6, first, &paths, &self.reach[0]),
            (
                Arm::H2PrioOff,
                h2(off, &self.reach[1]),
                &paths,
                &self.reach[1],
            ),
            (
                Arm::H2PrioOn,
                h2(on, &self.reach[0]),
                &paths,
                &self.reach[0],
            ),
            (
                Arm::H2Push,
                PoolSpec {
                    push: true,
                    ..h2(pushing, &self.reach[2])
                },
                &paths,
                &self.reach[2],
            ),
        ];
        for ((arm, push, n), r) in anchors.iter().zip(&ng_reach) {
            let p = PoolSpec {
                push: *push,
                ..pool(LabProtocol::H2, n.addr, r, cfg.timeout)
            };
            pools.push((*arm, p, &ng_paths, r));
        }
        let resources = paths.len() - 1;
        let blocking = paths.iter().filter(|p| render_blocking(p)).count();
        log(&format!(
            "link {} ({}), page {}: {resources} sub-resources, {blocking} CSS/JS",
            rl.name,
            rl.describe(lp.mode()),
            self.name,
        ));
        let arms = {
            let _side = lp.client_side()?;
            self.load_arms(&pools, repeat, log)
        };
        let all: Vec<Arm> = arms.iter().map(|a| a.arm).collect();
        let verdicts = ["render", "page"]
            .into_iter()
            .filter_map(|m| verdict(m, &arms, &all, cfg.equivalence))
            .collect();
        let eq = cfg.equivalence;
        let priorities = verdict("render", &arms, &[Arm::H2PrioOff, Arm::H2PrioOn], eq);
        let push = verdict("render", &arms, &[Arm::H2PrioOn, Arm::H2Push], eq);
        drop(pools);
        drop(ng_reach);
        drop(anchors);
        Ok(RenderLinkResult {
            page: self.name.to_owned(),
            path: html_path,
            resources,
            render_blocking: blocking,
            description: rl.describe(lp.mode()),
            path_sides: lp.sides(),
            link: rl.clone(),
            arms,
            verdicts,
            priorities,
            push,
        })
    }

    /// `repeat` rounds of every arm, alternated (arm `k` of round `i` starts at `k + i`).
    fn load_arms(
        &self,
        pools: &[ArmPool<'_>],
        repeat: u32,
        log: &mut dyn FnMut(&str),
    ) -> Vec<ArmResult> {
        let name = &self.link.name;
        let mut loads: Vec<Vec<(f64, f64)>> = vec![Vec::new(); pools.len()];
        let mut rounds: Vec<Vec<u32>> = vec![Vec::new(); pools.len()];
        let mut pushed: Vec<Vec<(u64, u64)>> = vec![Vec::new(); pools.len()];
        let mut errors: Vec<Option<String>> = vec![None; pools.len()];
        let mut counted: Vec<Option<PathCounters>> = vec![None; pools.len()];
        for i in 0..repeat as usize {
            for k in 0..pools.len() {
                let j = (k + i) % pools.len();
                let (arm, p, paths, reach) = &pools[j];
                let before = self.path.counters(reach);
                let result = load::load_page(p, paths);
                path::add(&mut counted[j], before, self.path.counters(reach));
                match result {
                    Ok(l) if l.failed == 0 => {
                        let r = render_ms(&l, paths);
                        log(&format!(
                            "  {name} load {}/{repeat} {:<12} render {:>9}  page {:>9}",
                            i + 1,
                            arm.label(),
                            crate::fmt::ms(r),
                            crate::fmt::ms(l.page_ms)
                        ));
                        loads[j].push((r, l.page_ms));
                        rounds[j].push(i as u32);
                        pushed[j].push((l.push.bytes, l.push.bytes_wasted));
                    }
                    Ok(l) => {
                        errors[j].get_or_insert(format!("{} requests failed", l.failed));
                    }
                    Err(e) => {
                        log(&format!("  {name} {}: {e}", arm.label()));
                        errors[j].get_or_insert(e.to_string());
                    }
                }
            }
        }
        let per_arm = loads.into_iter().zip(rounds).zip(pushed).zip(errors);
        pools
            .iter()
            .zip(per_arm)
            .zip(counted)
            .map(|((pool, (((l, load_rounds), pu), error)), path)| {
                let r: Vec<f64> = l.iter().map(|x| x.0).collect();
                let p: Vec<f64> = l.iter().map(|x| x.1).collect();
                let n = (pu.len() as u64).max(1);
                ArmResult {
                    arm: pool.0,
                    render_ms: MedianSpread::of(&r),
                    page_ms: MedianSpread::of(&p),
                    loads: l,
                    load_rounds,
                    pushed_bytes: pu.iter().map(|x| x.0).sum::<u64>() / n,
                    pushed_wasted_bytes: pu.iter().map(|x| x.1).sum::<u64>() / n,
                    error,
                    path,
                }
            })
            .collect()
    }
}
