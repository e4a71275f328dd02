//! `hugelab run`'s arguments: syntax only; the planner (`plan/mod.rs`) turns them into a validated plan.

use crate::units::parse_positive_duration;
use clap::Args;
use std::path::PathBuf;
use std::time::Duration;

/// Exit code of a run that stopped on a failed trial or completed no block with every trial
/// ok (its status in the results database is `failed`).
pub const EXIT_FAILED: i32 = 4;

#[derive(Debug, Args)]
#[command(
    after_help = "Exit codes: 0 the run completed (whatever the verdicts); 1 an error stopped it; \
2 a usage error, found before anything ran or was stored, or a primary metric that came out 0 or \
negative (no ratio can be taken: the run stops at that trial); 3 --fail-on slower and an arm was SLOWER \
on the primary metric; 4 the run failed: it stopped on a failed trial (a non-zero exit, a signal, \
--timeout, a metric not found, a server that did not start or died) or no block completed with \
every trial ok (stored with status `failed`); 130 interrupted by Ctrl-C (completed blocks analysed).\n\
The primary metric is the first --metric (or a load parser's first metric), else wall time: \
--fail-on, --sequential and --looks decide on it."
)]
pub struct RunArgs {
    /// An arm NAME=SPEC (repeatable), SPEC = comma-separated key=value. System-wide: thp,
    /// defrag, shmem, mthp.<size>, hugetlb.<size> (a pool), khugepaged.<knob>. Per process:
    /// process.thp=off, malloc=thp|hugetlb|hugetlb-1G, jvm=off|thp|hugetlbfs, collapse=after:<d>,
    /// env.<NAME>. Files: tmpfs.huge (a tmpfs mounted for the arm, {tmpfs}). Every key: --help
    #[arg(short = 'a', long = "arm", value_name = "NAME=SPEC", long_help = concat!(
        "An arm NAME=SPEC (repeatable), SPEC = comma-separated key=value, e.g. -a never=thp=never \
         -a off=process.thp=off -a shm=tmpfs.huge=always. Keys: ", crate::arm_keys!(),
        ". System-wide keys (thp, defrag, shmem, mthp.*, hugetlb.*, khugepaged.*, thp.*, \
         vm.defrag_mode) need root and are restored; tmpfs.huge=never|always|within_size|advise \
         mounts a tmpfs for the arm whose path the command gets as {tmpfs}; what each key does: \
         docs/run.md"))]
    pub arms: Vec<String>,
    /// Arms from a preset: thp (never/madvise/always), thp-profiles (those with the defrag and
    /// khugepaged.max_ptes_none deployments pair them with: 511, 409, and MongoDB 8.0's
    /// always+defer+madvise+0; max_ptes_none governs khugepaged's collapses and the underused
    /// shrinker, not huge pages taken at the first touch), malloc
    /// (process.thp=off/malloc=thp/malloc=hugetlb), jvm (off/thp/hugetlbfs); for --server: postgres, redis, memcached, mariadb (arms, readiness,
    /// fallback signature and load parser; the arms are printed)
    #[arg(short = 'p', long)]
    pub preset: Option<String>,
    /// The arm the others are compared with (default: the first)
    #[arg(long)]
    pub baseline: Option<String>,
    /// Unmeasured runs of each arm before the blocks [default: 1; services under the warm
    /// design: 0, their warm-up is the server's own at every lifetime start]
    #[arg(short = 'w', long, allow_negative_numbers = true, value_parser = crate::options::parse_warmup)]
    pub warmup: Option<usize>,
    /// Blocks (each runs every arm once, in random order) [default: 10; with --sequential, a
    /// maximum of 1000, usually bounded by --max-time; services under the warm design: as many
    /// as fit in --max-time, 5 minutes by default]
    #[arg(short = 'b', long, allow_negative_numbers = true, value_parser = crate::options::parse_count)]
    pub blocks: Option<usize>,
    /// Stop as soon as every contrast is settled (a confidence sequence for the mean log-ratio,
    /// looked at after every block; α split across contrasts). Its time-uniform validity is
    /// asymptotic: the sample SD is plugged in for the unknown one (the simulation study
    /// measures the false-positive rate it really has)
    #[arg(long, conflicts_with = "looks")]
    pub sequential: bool,
    /// Run until every contrast of the primary metric is this precise (its interval ±PCT, e.g.
    /// 1%) or --max-time ends; looks after every block with the sequential design's confidence
    /// sequence (valid however often it is looked at), so it implies --sequential
    #[arg(long, value_name = "PCT", conflicts_with_all = ["looks", "calibrate"], value_parser = crate::options::parse_half_width)]
    pub target_halfwidth: Option<f64>,
    /// Group-sequential O'Brien–Fleming design: K equally spaced looks up to --blocks (the
    /// maximum); stops at the first look where every contrast is settled
    #[arg(long, value_name = "K", value_parser = clap::value_parser!(u32).range(2..=20))]
    pub looks: Option<u32>,
    /// A/A calibration: run the command as two identical arms for this long and print the
    /// machine's noise floor (the smallest effect it can resolve per minute of running)
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, conflicts_with_all = ["preset", "sequential", "looks"])]
    pub calibrate: Option<Duration>,
    #[command(flatten)]
    pub decision: crate::options::Decision,
    /// Stop starting new blocks after this long (e.g. 10m)
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub max_time: Option<Duration>,
    /// Shell command run before every trial (not measured)
    #[arg(long)]
    pub prepare: Option<String>,
    /// Drop the page cache before every trial (root)
    #[arg(long)]
    pub drop_caches: bool,
    /// Compact memory before every trial, so each arm starts from the same fragmentation (root)
    #[arg(long)]
    pub compact: bool,
    /// The machine state the trials run in (repeatable: every block count runs in each, one
    /// condition after another, and the answer adds each one's contrasts and the interaction):
    /// clean (as found), fragmented[=FRACTION][,proactiveness=N] (free memory in 4 KiB pieces,
    /// no free 2 MiB block; root), pressure=SIZE (MemAvailable held at SIZE), cache[=FRACTION]
    /// (free memory filled with clean page cache). Brought back before every trial
    #[arg(long = "condition", value_name = "STATE")]
    pub conditions: Vec<String>,
    /// An operator's event inside every burst, the same for every arm: a shell command run
    /// against the arm's server ({port}, {host}, {dir} filled), e.g. 'redis-cli -p {port}
    /// bgsave'. Its cost is measured: the server tree's added memory while the processes it
    /// made live (copy-on-write after a fork), Redis's own fork time with --preset redis
    #[arg(long, value_name = "COMMAND")]
    pub during: Option<String>,
    /// When in each burst --during runs: a share of the burst (20%; warm design) or a time
    /// after the load's start (500ms)
    #[arg(long, value_name = "AT", default_value = "20%")]
    pub during_at: String,
    /// Kill a trial (and its process group) after this long
    #[arg(long, allow_hyphen_values = true, value_parser = parse_positive_duration)]
    pub timeout: Option<Duration>,
    /// Working directory of the command (and of the server with --server)
    #[arg(long, value_name = "DIR")]
    pub cwd: Option<PathBuf>,
    /// Extra environment for the command, NAME=VALUE (repeatable)
    #[arg(long = "env", value_name = "NAME=VALUE", value_parser = crate::options::parse_env)]
    pub env: Vec<(String, String)>,
    /// Period of the cheap memory reads of the child (/proc/PID/status); the page-table walk of
    /// smaps_rollup backs off from 4× this (at most 10 walks per trial), the same for every arm
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "20ms")]
    pub sample_every: Duration,
    /// Do not sample the child's memory (flags then rest on the kernel's THP counters alone)
    #[arg(long)]
    pub no_sample: bool,
    /// Trace the kernel's costs per trial (root), comma-separated kinds; each trial's histograms
    /// are stored with it and the stall time per trial is summarised per arm
    #[arg(long, value_name = "KINDS", value_delimiter = ',')]
    pub trace: Vec<crate::analyze::trace::TraceKind>,
    /// Run the child on this CPU only and hugelab on the others (less cross-talk; docs/run.md)
    #[arg(long, value_name = "CPU")]
    pub pin: Option<usize>,
    /// Run the command through /bin/sh -c
    #[arg(long)]
    pub shell: bool,
    /// Run the command as this user (when hugelab runs as root)
    #[arg(long)]
    pub user: Option<String>,
    /// Extract a number from the command's output: NAME=REGEX[,higher|lower] (first capture
    /// group), or a load generator's output read by a built-in parser: pgbench (tps and
    /// latency p50/p95/p99/p99.9 from its per-transaction log, which hugelab asks for),
    /// redis-benchmark (--csv, per -t test: rps, p50, p99), memtier, sysbench, wrk, jmh. With
    /// --server, a known load program is read without --metric
    #[arg(
        short = 'm',
        long = "metric",
        value_name = "NAME=REGEX[,higher|lower]|FORMAT"
    )]
    pub metrics: Vec<String>,
    /// Measure a service: start this server under each arm's configuration (kept up for a
    /// few blocks under the warm design, fresh for every trial under restart)
    /// (per-process keys, env.* and server.arg=WORD apply to the server, not to the load),
    /// wait until it is ready, run the command after -- as its load (the measured trial),
    /// then stop it (SIGTERM, --stop-grace, SIGKILL of its process tree) and read its memory.
    /// Placeholders in it and in the load are filled per arm and replica: {port}, {host},
    /// {dir}, {arm}, {replica}, {burst}
    #[arg(long, value_name = "COMMAND")]
    pub server: Option<String>,
    /// When the server is ready: tcp:HOST:PORT, unix:PATH, cmd:COMMAND (exits 0), log:REGEX
    /// (a line of its output); a --preset brings one
    #[arg(long, value_name = "PROBE")]
    pub ready: Option<String>,
    /// Fail the trial when the server is not ready after this long
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "60s")]
    pub ready_timeout: Duration,
    /// A shell command run against the ready server before the load (not measured)
    #[arg(long, value_name = "COMMAND")]
    pub server_warmup: Option<String>,
    /// A data directory copied into each server's {dir} as {dir}/data before it first starts
    /// (per arm, and per replica): every server on a copy of its own, e.g. --server 'postgres
    /// -D {dir}/data -k {dir} -p {port}'; the directory is only read
    #[arg(long, value_name = "DIR")]
    pub server_data: Option<PathBuf>,
    /// For a server that daemonizes (its command exits 0 once the daemon runs, e.g. pg_ctl
    /// start, redis-server --daemonize yes): the pid file it writes; the daemon and its
    /// descendants are then the server that is read and stopped
    #[arg(long, value_name = "PATH")]
    pub server_pidfile: Option<PathBuf>,
    /// How a service is measured: warm (every arm's server up at once, warmed, one short load
    /// burst per arm in random order per block, all restarted every lifetime; the default
    /// wherever the arms can run side by side) or restart (a fresh server per trial)
    #[arg(long, value_enum, value_name = "DESIGN")]
    pub design: Option<crate::model::run::ServiceDesign>,
    /// Services: clear the server tree's referenced bits before each load and read what the
    /// load touched after it (its hot memory): the answer's "why" then holds the hot memory,
    /// not all the memory that matters, against the TLB reach `bench tlb` measured. Perturbs
    /// reclaim's aging of the server's pages
    #[arg(long)]
    pub hot: bool,
    /// Warm design: when a block's bursts run: duet (every arm's burst at the same moment, so
    /// the machine's changing noise hits all alike) or alternating (one after another, in
    /// random order); default: duet
    #[arg(long, value_enum, value_name = "SCHEDULE")]
    pub schedule: Option<crate::model::run::BurstSchedule>,
    /// Warm design: the length of each load burst, filled into {burst} (whole seconds; a
    /// pgbench -T of a preset becomes {burst}); default: calibrated against the first server
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration)]
    pub burst: Option<Duration>,
    /// Warm design: blocks per server lifetime before every server is restarted; default:
    /// sized from the first lifetimes (restart cost against burst cost)
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=1000))]
    pub lifetime_blocks: Option<u32>,
    /// Warm design: servers per arm run at once, each its own data copy, port and lifetimes
    /// (every block then holds N paired bursts); default: as many as the CPUs and memory one
    /// burst left room for, measured at the first lifetime (1 where there is none). More than
    /// one runs every burst of a block at once (duet). A path the servers or the load name
    /// per arm must hold {replica} or {dir} (e.g. -D /data/{arm}-{replica}), or one runs
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u32).range(1..=16))]
    pub replicas: Option<u32>,
    /// Warm design: a lifetime ends after this long even with blocks to go
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "60s")]
    pub lifetime_max: Duration,
    /// After SIGTERM, how long the server may take to exit before it is killed
    #[arg(long, value_name = "DURATION", value_parser = parse_positive_duration, default_value = "15s")]
    pub stop_grace: Duration,
    /// Keep going when a trial fails (failed trials are kept, counted and excluded)
    #[arg(long)]
    pub keep_going: bool,
    /// Exit with code 3 when any arm is SLOWER on the primary metric (for CI; the primary
    /// metric is the first --metric, or a load parser's first, else wall_s)
    #[arg(long, value_enum)]
    pub fail_on: Option<crate::options::FailOn>,
    #[command(flatten)]
    pub store: crate::options::Database,
    /// Do not store the run (the results database is not opened; `results show` cannot see it)
    #[arg(long, conflicts_with_all = ["db", "label"])]
    pub no_save: bool,
    /// A label for this run in the results database
    #[arg(long)]
    pub label: Option<String>,
    #[command(flatten)]
    pub order: crate::options::Seed,
    #[command(flatten)]
    pub settings: crate::options::SettingsWait,
    #[command(flatten)]
    pub out: crate::options::Json,
    /// After the answer, print every table: per-metric summaries, evidence, machine noise,
    /// servers (what `results show` prints for a stored run)
    #[arg(short = 'v', long)]
    pub verbose: bool,
    #[command(flatten)]
    pub progress: crate::options::Quiet,
    /// The command and its arguments (after --)
    #[arg(last = true, required = true)]
    pub command: Vec<String>,
}
