//! The user's view of a campaign: a status line every few seconds, AFL-style stats files for
//! dashboards (`fuzzer_stats`, `plot_data`), and the summary at the end. Counters carry over
//! from an earlier run of the same campaign (`--resume`).

use std::collections::{BTreeMap, HashMap};
use std::fs;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use libafl::Error;
use libafl::monitors::Monitor;
use libafl::monitors::stats::{ClientStatsManager, UserStatsValue};
use libafl_bolts::ClientId;

use judge::Tier;

use super::executor::STAT_NAMES;

/// Counters of a campaign, over all its runs.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Totals {
    pub execs: u64,
    pub run_seconds: f64,
    pub valid: u64,
    pub invalid: u64,
    /// Microseconds: inside Keras/TF, in executions, and the executions' parts.
    pub tf_us: u64,
    pub exec_us: u64,
    pub oracle_us: u64,
    pub worker_us: u64,
    pub judge_us: u64,
    pub handle_us: u64,
    pub worker_starts: u64,
    pub python_lines: u64,
    /// Cases past the timeout that finished when run again with a longer one.
    pub slow: u64,
    /// Workers replaced for their memory.
    pub recycled: u64,
    /// Memory blow-ups not seen again on a fresh worker.
    pub outgrown: u64,
    /// Executions whose worker died, and executions a known framework bug or limitation
    /// explains.
    pub crashes: u64,
    pub known: u64,
    /// Executions on the model the worker held (only values changed).
    pub held: u64,
    /// Executions of cases the target cannot express.
    pub unsupported: u64,
    /// Runs and microseconds (the worker's round trips) per backend, in
    /// [`harness_py::Backend::ALL`]'s order.
    pub backend_runs: [u64; 3],
    pub backend_us: [u64; 3],
    pub clients: usize,
    pub execs_per_sec: f64,
    pub corpus: usize,
    pub findings: BTreeMap<String, usize>,
    /// Findings by tier (`wrong-result`, ..., `ieee`), as their `outcome.json` says.
    pub tiers: BTreeMap<Tier, usize>,
}

impl Totals {
    /// The counters an earlier run left in `fuzzer_stats` (zero when there is none).
    pub fn read(out: &Path) -> Totals {
        let Some(text) = super::findings::read_record(&out.join("fuzzer_stats")) else {
            return Totals::default();
        };
        let get = |key: &str| -> f64 {
            text.lines()
                .filter_map(|l| l.split_once(':'))
                .find(|(k, _)| k.trim() == key)
                .and_then(|(_, v)| v.trim().parse().ok())
                .unwrap_or(0.0)
        };
        Totals {
            execs: get("execs_done") as u64,
            run_seconds: get("run_time"),
            valid: get("valid_execs") as u64,
            invalid: get("invalid_execs") as u64,
            tf_us: (get("tf_seconds") * 1e6) as u64,
            exec_us: (get("exec_seconds") * 1e6) as u64,
            oracle_us: (get("oracle_seconds") * 1e6) as u64,
            worker_us: (get("worker_seconds") * 1e6) as u64,
            judge_us: (get("judge_seconds") * 1e6) as u64,
            handle_us: (get("worker_handle_seconds") * 1e6) as u64,
            worker_starts: get("worker_starts") as u64,
            slow: get("slow_cases") as u64,
            recycled: get("worker_recycles") as u64,
            outgrown: get("oom_not_reproduced") as u64,
            crashes: get("crash_execs") as u64,
            known: get("known_execs") as u64,
            held: get("held_model_execs") as u64,
            unsupported: get("unsupported_execs") as u64,
            backend_runs: harness_py::Backend::ALL.map(|b| get(&format!("{b}_runs")) as u64),
            backend_us: harness_py::Backend::ALL
                .map(|b| (get(&format!("{b}_seconds")) * 1e6) as u64),
            clients: get("clients") as usize,
            execs_per_sec: get("execs_per_sec"),
            ..Totals::default()
        }
    }

    pub fn findings_total(&self) -> usize {
        self.findings.values().sum()
    }

    /// The findings' count by tier, first to last, with `ieee` apart:
    /// `5 (wrong-result 1, validation 3; ieee 1)`.
    fn findings_text(&self) -> String {
        if self.findings.is_empty() {
            return "0".to_owned();
        }
        let part = |(t, n): (&Tier, &usize)| format!("{} {n}", t.name());
        let main: Vec<String> = self
            .tiers
            .iter()
            .filter(|(t, _)| **t != Tier::Ieee)
            .map(part)
            .collect();
        let ieee: Vec<String> = self
            .tiers
            .iter()
            .filter(|(t, _)| **t == Tier::Ieee)
            .map(part)
            .collect();
        let mut text = main.join(", ");
        if !ieee.is_empty() {
            if !text.is_empty() {
                text.push_str("; ");
            }
            text.push_str(&ieee.join(""));
        }
        if text.is_empty() {
            return self.findings_total().to_string();
        }
        format!("{} ({text})", self.findings_total())
    }

    fn percent(part: u64, whole: u64) -> f64 {
        if whole == 0 {
            0.0
        } else {
            100.0 * part as f64 / whole as f64
        }
    }

    /// Share of executions the reference called valid, in percent.
    pub fn valid_percent(&self) -> f64 {
        Self::percent(self.valid, self.execs)
    }

    /// Share of the clients' execution time spent inside Keras/TF, in percent.
    pub fn tf_percent(&self) -> f64 {
        Self::percent(self.tf_us, self.exec_us)
    }
}

/// Counts of corpus entries, of findings by verdict and of findings by tier, from disk (so
/// every client and every earlier run counts).
type Scanned = (usize, BTreeMap<String, usize>, BTreeMap<Tier, usize>);

/// `tiers_seen`: the tier of each finding folder read so far. A finding's tier never changes
/// once written, so each `outcome.json` is read once, not at every rescan.
fn scan(out: &Path, tiers_seen: &mut HashMap<PathBuf, Tier>) -> Scanned {
    let visible = |d: &Path| -> Vec<PathBuf> {
        fs::read_dir(d)
            .map(|it| {
                it.filter_map(Result::ok)
                    .filter(|e| !e.file_name().to_string_lossy().starts_with('.'))
                    .map(|e| e.path())
                    .collect()
            })
            .unwrap_or_default()
    };
    let corpus = visible(&out.join("corpus"))
        .iter()
        .filter(|p| p.to_string_lossy().ends_with(".case.json"))
        .count();
    let mut findings = BTreeMap::new();
    let mut tiers = BTreeMap::new();
    for verdict in visible(&out.join("findings")) {
        let dirs: Vec<PathBuf> = visible(&verdict)
            .into_iter()
            .filter(|p| p.is_dir())
            .collect();
        if !dirs.is_empty() {
            let name = verdict.file_name().unwrap_or_default().to_string_lossy();
            findings.insert(name.into_owned(), dirs.len());
        }
        for d in dirs {
            let tier = match tiers_seen.get(&d) {
                Some(t) => Some(*t),
                None => {
                    let t = recorded_tier(&d);
                    if let Some(t) = t {
                        tiers_seen.insert(d, t);
                    }
                    t
                }
            };
            if let Some(t) = tier {
                *tiers.entry(t).or_insert(0) += 1;
            }
        }
    }
    (corpus, findings, tiers)
}

/// The tier a finding's `outcome.json` records, when it records one.
pub fn recorded_tier(finding: &Path) -> Option<Tier> {
    super::findings::read_record(&finding.join("outcome.json"))
        .and_then(|t| serde_json::from_str::<serde_json::Value>(&t).ok())
        .and_then(|o| serde_json::from_value::<Tier>(o["tier"].clone()).ok())
}

fn hms(seconds: f64) -> String {
    let s = seconds.max(0.0) as u64;
    format!("{}h{:02}m{:02}s", s / 3600, s / 60 % 60, s % 60)
}

/// Writes `fuzzer_stats` (replaced) and, when `plot`, a line of `plot_data` (appended).
fn write_stats(out: &Path, t: &Totals, plot: bool) -> std::io::Result<()> {
    let now = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut s = String::new();
    let mut kv = |k: &str, v: String| s.push_str(&format!("{k:<18}: {v}\n"));
    kv("last_update", now.to_string());
    kv("run_time", format!("{:.0}", t.run_seconds));
    kv("fuzzer_pid", std::process::id().to_string());
    kv("clients", t.clients.to_string());
    kv("execs_done", t.execs.to_string());
    kv("execs_per_sec", format!("{:.2}", t.execs_per_sec));
    kv("corpus_count", t.corpus.to_string());
    kv("saved_findings", t.findings_total().to_string());
    for (verdict, n) in &t.findings {
        kv(
            &format!("findings_{}", verdict.replace('-', "_")),
            n.to_string(),
        );
    }
    for tier in Tier::ALL {
        kv(
            &format!("tier_{}", tier.name().replace('-', "_")),
            t.tiers.get(&tier).copied().unwrap_or(0).to_string(),
        );
    }
    kv("valid_execs", t.valid.to_string());
    kv("invalid_execs", t.invalid.to_string());
    kv("valid_percent", format!("{:.1}", t.valid_percent()));
    let seconds = |us: u64| format!("{:.3}", us as f64 / 1e6);
    kv("tf_seconds", seconds(t.tf_us));
    kv("exec_seconds", seconds(t.exec_us));
    kv("oracle_seconds", seconds(t.oracle_us));
    kv("worker_seconds", seconds(t.worker_us));
    kv("judge_seconds", seconds(t.judge_us));
    kv("worker_handle_seconds", seconds(t.handle_us));
    kv("tf_time_percent", format!("{:.1}", t.tf_percent()));
    kv("worker_starts", t.worker_starts.to_string());
    kv("python_lines", t.python_lines.to_string());
    kv("slow_cases", t.slow.to_string());
    kv("worker_recycles", t.recycled.to_string());
    kv("oom_not_reproduced", t.outgrown.to_string());
    kv("crash_execs", t.crashes.to_string());
    kv("known_execs", t.known.to_string());
    kv("held_model_execs", t.held.to_string());
    kv("unsupported_execs", t.unsupported.to_string());
    // Per backend that ran cases: runs (a case compared on two backends counts on each) and
    // the seconds its worker took for them.
    for (i, b) in harness_py::Backend::ALL.iter().enumerate() {
        if t.backend_runs[i] > 0 {
            kv(&format!("{b}_runs"), t.backend_runs[i].to_string());
            kv(&format!("{b}_seconds"), seconds(t.backend_us[i]));
        }
    }
    kv(
        "held_model_percent",
        format!("{:.1}", Totals::percent(t.held, t.execs)),
    );
    let tmp = out.join(".fuzzer_stats.tmp");
    fs::write(&tmp, s)?;
    fs::rename(&tmp, out.join("fuzzer_stats"))?;
    if !plot {
        return Ok(());
    }
    let plot = out.join("plot_data");
    let fresh = !plot.exists();
    let mut f = fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(plot)?;
    if fresh {
        writeln!(
            f,
            "# unix_time, run_time, execs_done, execs_per_sec, corpus_count, saved_findings, valid_percent, tf_time_percent, tf_seconds, exec_seconds"
        )?;
    }
    writeln!(
        f,
        "{now}, {:.1}, {}, {:.2}, {}, {}, {:.1}, {:.1}, {:.3}, {:.3}",
        t.run_seconds,
        t.execs,
        t.execs_per_sec,
        t.corpus,
        t.findings_total(),
        t.valid_percent(),
        t.tf_percent(),
        t.tf_us as f64 / 1e6,
        t.exec_us as f64 / 1e6
    )
}

/// How often `fuzzer_stats` is rewritten at most while a campaign runs.
const STATS_EVERY: Duration = Duration::from_secs(1);

pub struct StatusMonitor {
    out: PathBuf,
    base: Totals,
    started: Instant,
    limit: Option<Duration>,
    every: Duration,
    last_line: Option<Instant>,
    /// Corpus and findings counts, rescanned at most every second.
    scanned: Option<(Instant, Scanned)>,
    /// The tier of each finding folder read so far (see [`scan`]).
    tiers_seen: HashMap<PathBuf, Tier>,
    /// When `fuzzer_stats` was last written, and the totals not written yet.
    written: Option<Instant>,
    pending: Option<Totals>,
    /// Print the status line (the stats files are written either way).
    print: bool,
}

impl StatusMonitor {
    pub fn new(out: &Path, base: Totals, limit: Option<Duration>, print: bool) -> Self {
        StatusMonitor {
            out: out.to_owned(),
            base,
            scanned: None,
            tiers_seen: HashMap::new(),
            written: None,
            pending: None,
            started: Instant::now(),
            limit,
            every: Duration::from_secs(5),
            last_line: None,
            print,
        }
    }

    fn totals(&self, csm: &mut ClientStatsManager) -> Totals {
        let g = csm.global_stats();
        let mut t = self.base.clone();
        t.execs += g.total_execs;
        t.run_seconds += self.started.elapsed().as_secs_f64();
        t.execs_per_sec = g.execs_per_sec;
        t.clients = g.client_stats_count;
        let mut sums = [0u64; STAT_NAMES.len()];
        for client in csm.client_stats().values() {
            for (i, name) in STAT_NAMES.iter().enumerate() {
                if let Some(UserStatsValue::Number(n)) =
                    client.get_user_stats(name).map(|s| s.value().clone())
                {
                    sums[i] += n;
                }
            }
        }
        let [
            valid,
            invalid,
            tf_us,
            exec_us,
            oracle_us,
            worker_us,
            judge_us,
            handle_us,
            starts,
            python_lines,
            slow,
            crashes,
            known,
            recycled,
            outgrown,
            held,
            unsupported,
            tensorflow_runs,
            jax_runs,
            torch_runs,
            tensorflow_us,
            jax_us,
            torch_us,
        ] = sums;
        for (i, (runs, us)) in [
            (tensorflow_runs, tensorflow_us),
            (jax_runs, jax_us),
            (torch_runs, torch_us),
        ]
        .into_iter()
        .enumerate()
        {
            t.backend_runs[i] += runs;
            t.backend_us[i] += us;
        }
        t.held += held;
        t.unsupported += unsupported;
        t.recycled += recycled;
        t.outgrown += outgrown;
        t.slow += slow;
        t.crashes += crashes;
        t.known += known;
        t.python_lines = python_lines;
        t.valid += valid;
        t.invalid += invalid;
        t.tf_us += tf_us;
        t.exec_us += exec_us;
        t.oracle_us += oracle_us;
        t.worker_us += worker_us;
        t.judge_us += judge_us;
        t.handle_us += handle_us;
        t.worker_starts += starts;
        t
    }

    fn line(&self, t: &Totals) -> String {
        let elapsed = self.started.elapsed().as_secs_f64();
        let time = match self.limit {
            Some(l) => format!(
                "{} elapsed, {} left",
                hms(elapsed),
                hms(l.as_secs_f64() - elapsed)
            ),
            None => format!("{} elapsed", hms(elapsed)),
        };
        format!(
            "[semfuzz] {time} | {:.1} exec/s | execs {} | corpus {} | findings {} | valid {:.1}% | in TF {:.0}%",
            t.execs_per_sec,
            t.execs,
            t.corpus,
            t.findings_text(),
            t.valid_percent(),
            t.tf_percent()
        )
    }
}

impl StatusMonitor {
    /// Writes the stats files with `t`, reporting a failure in the log.
    fn write(&mut self, t: &Totals, plot: bool) {
        self.written = Some(Instant::now());
        self.pending = None;
        if let Err(e) = write_stats(&self.out, t, plot) {
            tracing::warn!(
                "cannot write the stats files in {}: {e}",
                self.out.display()
            );
        }
    }
}

/// The monitor goes with the event manager when the campaign ends: the last totals are
/// written then.
impl Drop for StatusMonitor {
    fn drop(&mut self) {
        if let Some(t) = self.pending.take() {
            self.write(&t, false);
        }
    }
}

impl Monitor for StatusMonitor {
    /// Called on every event (in the broker's process under the launcher). `fuzzer_stats`
    /// is rewritten at most every [`STATS_EVERY`] (a rename on some file systems costs
    /// milliseconds, and events come after every execution) and once more when the monitor
    /// goes, so it is current when the campaign ends; the status line and `plot_data` come
    /// every few seconds.
    fn display(
        &mut self,
        csm: &mut ClientStatsManager,
        _event: &str,
        _sender: ClientId,
    ) -> Result<(), Error> {
        let mut t = self.totals(csm);
        if self
            .scanned
            .as_ref()
            .is_none_or(|(at, ..)| at.elapsed() >= Duration::from_secs(1))
        {
            self.scanned = Some((Instant::now(), scan(&self.out, &mut self.tiers_seen)));
        }
        if let Some((_, (corpus, findings, tiers))) = &self.scanned {
            t.corpus = *corpus;
            t.findings = findings.clone();
            t.tiers = tiers.clone();
        }
        let tick = self.last_line.is_none_or(|l| l.elapsed() >= self.every);
        if tick || self.written.is_none_or(|w| w.elapsed() >= STATS_EVERY) {
            self.write(&t, tick);
        } else {
            self.pending = Some(t.clone());
        }
        if tick {
            self.last_line = Some(Instant::now());
            if self.print {
                println!("{}", self.line(&t));
            }
        }
        Ok(())
    }
}

/// The summary printed when a campaign stops, from the stats files and the disk. `entries`:
/// the suppression entries it ran with, of which those that explained nothing are named.
pub fn summary(out: &Path, why: &str, entries: &[&str]) -> String {
    let mut t = Totals::read(out);
    (t.corpus, t.findings, t.tiers) = scan(out, &mut HashMap::new());
    let mut s = format!(
        "[semfuzz] stopped ({why}) after {} in all: {} executions ({:.1}/s at the end), corpus {}, findings {}, valid {:.1}%, time in TF {:.0}%\n",
        hms(t.run_seconds),
        t.execs,
        t.execs_per_sec,
        t.corpus,
        t.findings_text(),
        t.valid_percent(),
        t.tf_percent()
    );
    let known = super::findings::read_known(&out.join(super::findings::KNOWN_FILE));
    if !known.is_empty() {
        let mut counts: Vec<(&String, u64)> = known
            .iter()
            .map(|(name, k)| (name, k["count"].as_u64().unwrap_or(0)))
            .collect();
        counts.sort_by(|a, b| b.1.cmp(&a.1).then(a.0.cmp(b.0)));
        let top: Vec<String> = counts
            .iter()
            .take(3)
            .map(|(name, n)| format!("{name} ({n})"))
            .collect();
        s += &format!(
            "[semfuzz] {} executions explained by {} known framework bug{} or limitation{}, counted, not reported: {}{} (all in {})\n",
            t.known,
            counts.len(),
            if counts.len() == 1 { "" } else { "s" },
            if counts.len() == 1 { "" } else { "s" },
            top.join(", "),
            if counts.len() > 3 { ", ..." } else { "" },
            out.join(super::findings::KNOWN_FILE).display()
        );
    }
    let unused: Vec<&str> = entries
        .iter()
        .copied()
        .filter(|id| !known.contains_key(*id))
        .collect();
    if !unused.is_empty() {
        s += &format!(
            "[semfuzz] {} of {} suppression entries explained nothing in this campaign: {}{}\n",
            unused.len(),
            entries.len(),
            unused
                .iter()
                .take(8)
                .copied()
                .collect::<Vec<_>>()
                .join(", "),
            if unused.len() > 8 { ", ..." } else { "" },
        );
    }
    if t.findings_total() > 0 {
        s += &format!(
            "[semfuzz] findings are in {}; triage them with: semfuzz triage {}\n",
            out.join("findings").display(),
            out.join("findings").display()
        );
    }
    s
}
