//! The catalogue of variables: one definition per trigger and ranking variable.
//!
//! Each variable is one line of a table below: its enum variant, its CEL name, its unit, what
//! it is read from, whether Talos has it, what it is a rate of, and its meaning. Everything
//! else is derived from that line: the storage of the [`TriggerContext`](crate::TriggerContext)
//! (an [`EnumMap`] per type, no positions), both CEL declarations and the activations
//! (`oomwarden-expr`), which files a cycle reads (`oomwarden-collect`'s `Reads`), the units
//! `replay`, `explain` and `top` print, the record's `triggerContext`, `oomwarden eval
//! variables` and the variable tables of docs/configuration.md (held to this by a test).
//!
//! Adding a trigger variable: a line here, its reading in `oomwarden-model`'s sample and the
//! reader (`oomwarden-collect`), its computation in `oomwarden-policy`'s `build_context`.

use enum_map::{Enum, EnumMap};
use serde::Serialize;

use crate::{PsiKind, PsiSpan};

/// Which expression reads a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Env {
    /// `triggerExpression` (Talos's `OOMTrigger`).
    Trigger,
    /// `cgroupRankingExpression` (Talos's `OOMCgroupScoring`).
    Ranking,
}

impl Env {
    /// The name, as `--env` takes it.
    pub fn name(self) -> &'static str {
        match self {
            Env::Trigger => "trigger",
            Env::Ranking => "ranking",
        }
    }
}

/// A variable's CEL type.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum VarType {
    /// `double`.
    Double,
    /// `map(int, double)`, keyed by the class constants, always all five.
    ClassMap,
    /// `google.protobuf.Duration`.
    Duration,
    /// `optional_type(uint)`.
    OptionalUint,
    /// `string`.
    String,
    /// `int`.
    Int,
    /// `map(string, string)`.
    StringMap,
    /// `list(string)`.
    StringList,
}

impl VarType {
    /// The type as cel-go prints it (`cel.Type.String()`).
    pub fn cel_go(self) -> &'static str {
        match self {
            VarType::Double => "double",
            VarType::ClassMap => "map(int, double)",
            VarType::Duration => "google.protobuf.Duration",
            VarType::OptionalUint => "optional_type(uint)",
            VarType::String => "string",
            VarType::Int => "int",
            VarType::StringMap => "map(string, string)",
            VarType::StringList => "list(string)",
        }
    }
}

impl Serialize for VarType {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.cel_go())
    }
}

/// A variable's unit.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
pub enum Unit {
    /// A PSI average: percent of wall time stalled.
    #[serde(rename = "percent")]
    Percent,
    /// The rate of a PSI average, percent per second.
    #[serde(rename = "percent/s")]
    PercentPerSecond,
    /// A PSI total: microseconds stalled since boot.
    #[serde(rename = "microseconds")]
    Microseconds,
    /// The rate of a PSI total: microseconds stalled per second.
    #[serde(rename = "microseconds/s")]
    MicrosecondsPerSecond,
    /// Bytes.
    #[serde(rename = "bytes")]
    Bytes,
    /// Bytes per second.
    #[serde(rename = "bytes/s")]
    BytesPerSecond,
    /// Pages per second.
    #[serde(rename = "pages/s")]
    PagesPerSecond,
    /// Nanoseconds (a duration; integer nanoseconds in the JSON form).
    #[serde(rename = "nanoseconds")]
    Nanoseconds,
    /// A class constant (`Besteffort` … `System`).
    #[serde(rename = "class")]
    Class,
    /// `oom_score_adj` units (−1000 … 1000).
    #[serde(rename = "oom_score_adj")]
    OomScoreAdj,
    /// Events per second (a `memory.events` counter's rate).
    #[serde(rename = "events/s")]
    EventsPerSecond,
}

impl Unit {
    /// The unit as the JSON form spells it.
    pub fn name(self) -> &'static str {
        match self {
            Unit::Percent => "percent",
            Unit::PercentPerSecond => "percent/s",
            Unit::Microseconds => "microseconds",
            Unit::MicrosecondsPerSecond => "microseconds/s",
            Unit::Bytes => "bytes",
            Unit::BytesPerSecond => "bytes/s",
            Unit::PagesPerSecond => "pages/s",
            Unit::Nanoseconds => "nanoseconds",
            Unit::Class => "class",
            Unit::OomScoreAdj => "oom_score_adj",
            Unit::EventsPerSecond => "events/s",
        }
    }
}

/// What a variable is read from.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Source {
    /// The root cgroup's `memory.pressure`.
    RootPressure,
    /// Each class's metrics cgroups' `memory.pressure`, summed.
    ClassPressure,
    /// Each class's metrics cgroups' `memory.current`, summed.
    ClassMemoryCurrent,
    /// Each class's metrics cgroups' `memory.peak`, summed.
    ClassMemoryPeak,
    /// Each class's metrics cgroups' `memory.max`, summed.
    ClassMemoryMax,
    /// Each class's metrics cgroups' `memory.stat`, summed.
    ClassMemoryStat,
    /// `/proc/meminfo`.
    Meminfo,
    /// `/proc/vmstat`.
    Vmstat,
    /// Each class's metrics cgroups' `memory.swap.current`, summed.
    ClassMemorySwap,
    /// Each class's metrics cgroups' `memory.events`, summed.
    ClassMemoryEvents,
    /// `/proc/meminfo` read whole: its swap and zswap lines (the other node variables read
    /// only its first lines).
    MeminfoSwap,
    /// The daemon's own state (when the trigger last held).
    LastTrigger,
    /// The candidate's `memory.max`.
    CandidateMemoryMax,
    /// The candidate's `memory.current`.
    CandidateMemoryCurrent,
    /// The candidate's `memory.peak`.
    CandidateMemoryPeak,
    /// The candidate's `memory.swap.current` and `memory.swap.max`.
    CandidateMemorySwap,
    /// The candidate's `memory.min`, `memory.low` and `memory.high`.
    CandidateProtection,
    /// The candidate's `memory.pressure`.
    CandidatePressure,
    /// The candidate's `memory.current`, also read about once a second between triggered
    /// cycles (its growth).
    CandidateGrowth,
    /// The candidate's cgroup path.
    CandidatePath,
    /// The layout: which class the candidate is in.
    Layout,
    /// The candidate's cgroup path, decoded as the kubelet names pod cgroups.
    PodCgroupName,
    /// The container runtime (CRI), else the kubelet's pod-log directories.
    PodIdentity,
    /// `/proc/<pid>/oom_score_adj` of the candidate's processes.
    OomScoreAdj,
    /// The action history: the kills recorded lately.
    History,
}

impl Source {
    /// What is read, in words.
    pub fn describe(self) -> &'static str {
        match self {
            Source::RootPressure => "memory.pressure of the root cgroup",
            Source::ClassPressure => "memory.pressure of each class's metrics cgroups, summed",
            Source::ClassMemoryCurrent => "memory.current of each class's metrics cgroups, summed",
            Source::ClassMemoryPeak => "memory.peak of each class's metrics cgroups, summed",
            Source::ClassMemoryMax => {
                "memory.max of each class's metrics cgroups, summed (max counts 0)"
            }
            Source::ClassMemoryStat => "memory.stat of each class's metrics cgroups, summed",
            Source::Meminfo => "/proc/meminfo",
            Source::Vmstat => "/proc/vmstat",
            Source::MeminfoSwap => "/proc/meminfo, read to its swap and zswap lines",
            Source::ClassMemorySwap => {
                "memory.swap.current of each class's metrics cgroups, summed"
            }
            Source::ClassMemoryEvents => "memory.events of each class's metrics cgroups, summed",
            Source::LastTrigger => "the daemon's state: when the trigger last held",
            Source::CandidateMemoryMax => "the candidate's memory.max",
            Source::CandidateMemoryCurrent => "the candidate's memory.current",
            Source::CandidateMemoryPeak => "the candidate's memory.peak",
            Source::CandidatePath => "the candidate's cgroup directory",
            Source::CandidateMemorySwap => {
                "the candidate's memory.swap.current and memory.swap.max"
            }
            Source::CandidateProtection => "the candidate's memory.min, memory.low and memory.high",
            Source::CandidatePressure => "the candidate's memory.pressure",
            Source::CandidateGrowth => {
                "the candidate's memory.current, also read once a second between triggers"
            }
            Source::Layout => "the layout: the class the candidate belongs to",
            Source::PodCgroupName => "the candidate's cgroup name, as the kubelet names pods",
            Source::PodIdentity => {
                "the container runtime (CRI), else the kubelet's pod-log directories"
            }
            Source::OomScoreAdj => "/proc/<pid>/oom_score_adj of the candidate's processes",
            Source::History => "the action history: the kills recorded in the last hour",
        }
    }
}

impl Serialize for Source {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.describe())
    }
}

/// Who defines a variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Origin {
    /// Talos 1.14 has it: a Talos expression may name it.
    Talos,
    /// oomwarden's extension: a Talos expression never names it.
    Oomwarden,
}

/// One variable's definition.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Definition {
    /// The CEL name.
    pub name: &'static str,
    /// The expression that reads it.
    pub env: Env,
    /// The CEL type.
    #[serde(rename = "type")]
    pub ty: VarType,
    /// The unit (`None` for names and labels).
    pub unit: Option<Unit>,
    /// What it is read from.
    pub source: Source,
    /// Talos's, or oomwarden's extension.
    pub origin: Origin,
    /// What it is the rate per second of, for a rate.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub rate_of: Option<&'static str>,
    /// What it means, in one line.
    pub description: &'static str,
}

/// Every key of an [`Enum`], in declaration order.
pub fn all<K: Enum>() -> impl Iterator<Item = K> {
    EnumMap::<K, ()>::default().into_iter().map(|(k, ())| k)
}

/// Declares one catalogue enum and the definition of each of its variables.
macro_rules! catalogue {
    // Every variable of the enum has the same type.
    (
        $(#[$meta:meta])*
        pub enum $enum:ident: $env:ident, $ty:ident {
            $( $var:ident $name:literal, $unit:expr, $source:ident, $origin:ident, $rate_of:expr, $desc:expr; )*
        }
    ) => {
        catalogue! {
            $(#[$meta])*
            pub enum $enum: $env {
                $( $var $name: $ty, $unit, $source, $origin, $rate_of, $desc; )*
            }
        }
    };
    (
        $(#[$meta:meta])*
        pub enum $enum:ident: $env:ident {
            $( $var:ident $name:literal: $ty:ident, $unit:expr, $source:ident, $origin:ident, $rate_of:expr, $desc:expr; )*
        }
    ) => {
        $(#[$meta])*
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Enum)]
        pub enum $enum {
            $( #[doc = concat!("`", $name, "`: ", $desc)] $var, )*
        }

        impl $enum {
            /// The variable's definition.
            pub const fn definition(self) -> Definition {
                match self {
                    $( $enum::$var => Definition {
                        name: $name,
                        env: Env::$env,
                        ty: VarType::$ty,
                        unit: $unit,
                        source: Source::$source,
                        origin: Origin::$origin,
                        rate_of: $rate_of,
                        description: $desc,
                    }, )*
                }
            }

            /// The CEL name.
            pub const fn name(self) -> &'static str {
                self.definition().name
            }
        }
    };
}

use Unit::{
    Bytes, BytesPerSecond, EventsPerSecond, Microseconds, MicrosecondsPerSecond, PagesPerSecond,
    Percent, PercentPerSecond,
};

catalogue! {
    /// The trigger's `double` variables.
    pub enum Scalar: Trigger, Double {
        MemorySomeAvg10 "memory_some_avg10", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: some task stalled on memory, 10 s average";
        MemorySomeAvg60 "memory_some_avg60", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: some task stalled on memory, 60 s average";
        MemorySomeAvg300 "memory_some_avg300", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: some task stalled on memory, 300 s average";
        MemorySomeTotal "memory_some_total", Some(Microseconds), RootPressure, Talos, None,
            "the node's PSI: time some task stalled on memory since boot";
        MemoryFullAvg10 "memory_full_avg10", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: every non-idle task stalled on memory, 10 s average";
        MemoryFullAvg60 "memory_full_avg60", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: every non-idle task stalled on memory, 60 s average";
        MemoryFullAvg300 "memory_full_avg300", Some(Percent), RootPressure, Talos, None,
            "the node's PSI: every non-idle task stalled on memory, 300 s average";
        MemoryFullTotal "memory_full_total", Some(Microseconds), RootPressure, Talos, None,
            "the node's PSI: time every non-idle task stalled on memory since boot";
        DMemorySomeAvg10 "d_memory_some_avg10", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_some_avg10"), "the rate of memory_some_avg10";
        DMemorySomeAvg60 "d_memory_some_avg60", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_some_avg60"), "the rate of memory_some_avg60";
        DMemorySomeAvg300 "d_memory_some_avg300", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_some_avg300"), "the rate of memory_some_avg300";
        DMemorySomeTotal "d_memory_some_total", Some(MicrosecondsPerSecond), RootPressure, Talos,
            Some("memory_some_total"), "stall (some) per second: the share of time stalled";
        DMemoryFullAvg10 "d_memory_full_avg10", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_full_avg10"), "the rate of memory_full_avg10";
        DMemoryFullAvg60 "d_memory_full_avg60", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_full_avg60"), "the rate of memory_full_avg60";
        DMemoryFullAvg300 "d_memory_full_avg300", Some(PercentPerSecond), RootPressure, Talos,
            Some("memory_full_avg300"), "the rate of memory_full_avg300";
        DMemoryFullTotal "d_memory_full_total", Some(MicrosecondsPerSecond), RootPressure, Talos,
            Some("memory_full_total"), "stall (full) per second: the share of time stalled";
        NodeMemoryAvailable "node_memory_available", Some(Bytes), Meminfo, Oomwarden, None,
            "MemAvailable: what can be allocated without swapping, droppable cache included (0 when unreadable)";
        NodeMemoryTotal "node_memory_total", Some(Bytes), Meminfo, Oomwarden, None,
            "MemTotal (0 when unreadable)";
        DNodeMemoryAvailable "d_node_memory_available", Some(BytesPerSecond), Meminfo, Oomwarden,
            Some("MemAvailable"), "the rate of MemAvailable (negative while memory runs out)";
        DNodeWorkingsetRefaultFile "d_node_workingset_refault_file", Some(PagesPerSecond), Vmstat,
            Oomwarden, Some("workingset_refault_file"),
            "file pages read back soon after reclaim took them: the working set no longer fits";
        DNodePgscan "d_node_pgscan", Some(PagesPerSecond), Vmstat, Oomwarden,
            Some("pgscan_kswapd + pgscan_direct + pgscan_khugepaged"),
            "pages scanned for reclaim";
        DNodePgscanDirect "d_node_pgscan_direct", Some(PagesPerSecond), Vmstat, Oomwarden,
            Some("pgscan_direct"),
            "pages scanned by the allocating tasks themselves (they stall meanwhile)";
        DNodePgsteal "d_node_pgsteal", Some(PagesPerSecond), Vmstat, Oomwarden,
            Some("pgsteal_kswapd + pgsteal_direct + pgsteal_khugepaged"), "pages reclaimed";
        NodeSwapTotal "node_swap_total", Some(Bytes), MeminfoSwap, Oomwarden, None,
            "SwapTotal: the swap configured (0 without swap, or when unreadable)";
        NodeSwapFree "node_swap_free", Some(Bytes), MeminfoSwap, Oomwarden, None,
            "SwapFree: the swap not in use (0 without swap, or when unreadable)";
        NodeZswapBytes "node_zswap_bytes", Some(Bytes), MeminfoSwap, Oomwarden, None,
            "Zswap: memory the compressed swap cache takes (0 where the kernel has none)";
        DNodeSwapFree "d_node_swap_free", Some(BytesPerSecond), MeminfoSwap, Oomwarden,
            Some("SwapFree"),
            "the rate of SwapFree: negative while swap fills, whether pages go to a disk (pswpout), to zswap or are zero pages the kernel keeps no copy of";
        DNodePswpin "d_node_pswpin", Some(PagesPerSecond), Vmstat, Oomwarden, Some("pswpin"),
            "pages read back from swap: with d_node_pswpout, the swap thrash signal";
        DNodePswpout "d_node_pswpout", Some(PagesPerSecond), Vmstat, Oomwarden, Some("pswpout"),
            "pages written out to a swap device (not those zswap keeps, nor zero pages since Linux 6.12)";
        DNodeZswpin "d_node_zswpin", Some(PagesPerSecond), Vmstat, Oomwarden, Some("zswpin"),
            "pages zswap decompressed back on a fault: the thrash signal where zswap keeps what pswpin never sees (0 without zswap)";
        DNodeZswpout "d_node_zswpout", Some(PagesPerSecond), Vmstat, Oomwarden, Some("zswpout"),
            "pages zswap compressed and kept (0 without zswap)";
        NodeMemoryAvailableTrend "node_memory_available_trend", Some(BytesPerSecond), Meminfo,
            Oomwarden, Some("MemAvailable"),
            "the median per-second rate of MemAvailable over 20 s, or 5 s when slower: a fall that lasts (0 until 20 s were seen)";
    }
}

catalogue! {
    /// The trigger's per-class maps, `map(int, double)`, always all five classes.
    pub enum PerClass: Trigger, ClassMap {
        QosMemorySomeAvg10 "qos_memory_some_avg10", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: some task stalled on memory, 10 s average";
        QosMemorySomeAvg60 "qos_memory_some_avg60", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: some task stalled on memory, 60 s average";
        QosMemorySomeAvg300 "qos_memory_some_avg300", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: some task stalled on memory, 300 s average";
        QosMemorySomeTotal "qos_memory_some_total", Some(Microseconds), ClassPressure, Talos, None,
            "PSI per class: time some task stalled on memory";
        QosMemoryFullAvg10 "qos_memory_full_avg10", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: every non-idle task stalled on memory, 10 s average";
        QosMemoryFullAvg60 "qos_memory_full_avg60", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: every non-idle task stalled on memory, 60 s average";
        QosMemoryFullAvg300 "qos_memory_full_avg300", Some(Percent), ClassPressure, Talos, None,
            "PSI per class: every non-idle task stalled on memory, 300 s average";
        QosMemoryFullTotal "qos_memory_full_total", Some(Microseconds), ClassPressure, Talos, None,
            "PSI per class: time every non-idle task stalled on memory";
        DQosMemorySomeAvg10 "d_qos_memory_some_avg10", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_some_avg10"), "the rate of qos_memory_some_avg10";
        DQosMemorySomeAvg60 "d_qos_memory_some_avg60", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_some_avg60"), "the rate of qos_memory_some_avg60";
        DQosMemorySomeAvg300 "d_qos_memory_some_avg300", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_some_avg300"), "the rate of qos_memory_some_avg300";
        DQosMemorySomeTotal "d_qos_memory_some_total", Some(MicrosecondsPerSecond), ClassPressure,
            Talos, Some("qos_memory_some_total"), "stall (some) per second, per class";
        DQosMemoryFullAvg10 "d_qos_memory_full_avg10", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_full_avg10"), "the rate of qos_memory_full_avg10";
        DQosMemoryFullAvg60 "d_qos_memory_full_avg60", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_full_avg60"), "the rate of qos_memory_full_avg60";
        DQosMemoryFullAvg300 "d_qos_memory_full_avg300", Some(PercentPerSecond), ClassPressure,
            Talos, Some("qos_memory_full_avg300"), "the rate of qos_memory_full_avg300";
        DQosMemoryFullTotal "d_qos_memory_full_total", Some(MicrosecondsPerSecond), ClassPressure,
            Talos, Some("qos_memory_full_total"), "stall (full) per second, per class";
        QosMemoryCurrent "qos_memory_current", Some(Bytes), ClassMemoryCurrent, Talos, None,
            "memory in use per class";
        QosMemoryPeak "qos_memory_peak", Some(Bytes), ClassMemoryPeak, Talos, None,
            "the peaks of memory use per class";
        QosMemoryMax "qos_memory_max", Some(Bytes), ClassMemoryMax, Talos, None,
            "the limits per class (an unlimited memory.max counts 0)";
        DQosMemoryCurrent "d_qos_memory_current", Some(BytesPerSecond), ClassMemoryCurrent, Talos,
            Some("qos_memory_current"), "the rate of qos_memory_current (Talos: always 0)";
        DQosMemoryPeak "d_qos_memory_peak", Some(BytesPerSecond), ClassMemoryPeak, Talos,
            Some("qos_memory_peak"), "the rate of qos_memory_peak (Talos: always 0)";
        DQosMemoryMax "d_qos_memory_max", Some(BytesPerSecond), ClassMemoryMax, Talos,
            Some("qos_memory_max"), "the rate of qos_memory_max (Talos: always 0)";
        DQosWorkingsetRefaultFile "d_qos_workingset_refault_file", Some(PagesPerSecond),
            ClassMemoryStat, Oomwarden, Some("workingset_refault_file"),
            "file pages read back soon after reclaim took them, per class";
        QosMemorySwapCurrent "qos_memory_swap_current", Some(Bytes), ClassMemorySwap, Oomwarden,
            None, "swap in use, per class (0 without swap accounting)";
        DQosMemoryEventsHigh "d_qos_memory_events_high", Some(EventsPerSecond), ClassMemoryEvents,
            Oomwarden, Some("memory.events high"),
            "times per second a class's cgroups were throttled at their own memory.high: stall they inflict on themselves";
        DQosMemoryEventsMax "d_qos_memory_events_max", Some(EventsPerSecond), ClassMemoryEvents,
            Oomwarden, Some("memory.events max"),
            "times per second a class's cgroups hit their own memory.max and reclaimed (or failed to): stall against their own limit";
        DQosMemoryEventsOom "d_qos_memory_events_oom", Some(EventsPerSecond), ClassMemoryEvents,
            Oomwarden, Some("memory.events oom"),
            "times per second a class's cgroups ran out of memory against their own limit";
        DQosPgscan "d_qos_pgscan", Some(PagesPerSecond), ClassMemoryStat, Oomwarden,
            Some("pgscan"), "pages scanned for reclaim, per class";
    }
}

catalogue! {
    /// The ranking's variables, one set per candidate.
    pub enum RankingVar: Ranking {
        MemoryMax "memory_max": OptionalUint, Some(Bytes), CandidateMemoryMax, Talos, None,
            "the limit; none when unlimited or unreadable";
        MemoryCurrent "memory_current": OptionalUint, Some(Bytes), CandidateMemoryCurrent, Talos,
            None, "memory in use; none when unreadable";
        MemoryPeak "memory_peak": OptionalUint, Some(Bytes), CandidateMemoryPeak, Talos, None,
            "the peak of memory use; none when unreadable (kernels before 5.19)";
        MemorySwapCurrent "memory_swap_current": OptionalUint, Some(Bytes), CandidateMemorySwap,
            Oomwarden, None,
            "swap in use (its pages written out: memory_current leaves them out); none when unreadable (no swap accounting)";
        MemorySwapMax "memory_swap_max": OptionalUint, Some(Bytes), CandidateMemorySwap, Oomwarden,
            None, "the swap limit; none when unlimited or unreadable";
        MemoryMin "memory_min": OptionalUint, Some(Bytes), CandidateProtection, Oomwarden, None,
            "memory.min: memory the kernel never reclaims from it (Kubernetes MemoryQoS sets it from requests); none when 0 or unreadable";
        MemoryLow "memory_low": OptionalUint, Some(Bytes), CandidateProtection, Oomwarden, None,
            "memory.low: memory reclaimed from it only when nothing else is left; none when 0 or unreadable";
        MemoryHigh "memory_high": OptionalUint, Some(Bytes), CandidateProtection, Oomwarden, None,
            "memory.high: where the kernel throttles it and reclaims from it first; none when unlimited or unreadable";
        PressureSomeAvg10 "pressure_some_avg10": Double, Some(Percent), CandidatePressure,
            Oomwarden, None,
            "its own memory.pressure, some avg10: stall of its tasks, at its own limit or the node's (0 when unreadable)";
        PressureFullAvg10 "pressure_full_avg10": Double, Some(Percent), CandidatePressure,
            Oomwarden, None, "its own memory.pressure, full avg10 (0 when unreadable)";
        DMemoryCurrent "d_memory_current": Double, Some(BytesPerSecond), CandidateGrowth,
            Oomwarden, Some("memory_current"),
            "its growth: memory_current's change per second over the last 1 to 2 s (negative when it shrinks; 0 without an earlier reading: a cgroup seen for the first time, the daemon's first second)";
        Path "path": String, None, CandidatePath, Talos, None,
            "the absolute cgroup directory";
        Class "class": Int, Some(Unit::Class), Layout, Talos, None,
            "the candidate's class constant";
        PodUid "pod_uid": String, None, PodCgroupName, Oomwarden, None,
            "the pod UID (\"\" for a cgroup that is not a pod)";
        PodNamespace "pod_namespace": String, None, PodIdentity, Oomwarden, None,
            "the pod's namespace (\"\" when no pod or unknown)";
        PodName "pod_name": String, None, PodIdentity, Oomwarden, None,
            "the pod's name (\"\" when unknown)";
        Labels "labels": StringMap, None, PodIdentity, Oomwarden, None,
            "the pod's labels (empty when unknown or from the pod-log directories)";
        Annotations "annotations": StringMap, None, PodIdentity, Oomwarden, None,
            "the pod's annotations (empty when unknown)";
        ContainerNames "container_names": StringList, None, PodIdentity, Oomwarden, None,
            "the names of the pod's containers, sorted (empty when unknown)";
        OomScoreAdj "oom_score_adj": Int, Some(Unit::OomScoreAdj), OomScoreAdj, Oomwarden, None,
            "the lowest oom_score_adj of the candidate's processes, the sandbox's left out (0 when none)";
        WorkloadKills "workload_kills": Int, None, History, Oomwarden, None,
            "the kills of the candidate's workload (every pod its Deployment, StatefulSet, DaemonSet or Job made; oomwarden's and the kernel's) in the last hour (0 when no pod or unknown)";
    }
}

/// A trigger variable.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum TriggerVar {
    /// A `double`.
    Scalar(Scalar),
    /// A `map(int, double)`.
    PerClass(PerClass),
    /// `time_since_trigger`, a duration.
    TimeSinceTrigger,
}

impl TriggerVar {
    /// `time_since_trigger`'s definition.
    const TIME_SINCE_TRIGGER: Definition = Definition {
        name: "time_since_trigger",
        env: Env::Trigger,
        ty: VarType::Duration,
        unit: Some(Unit::Nanoseconds),
        source: Source::LastTrigger,
        origin: Origin::Talos,
        rate_of: None,
        description: "since the trigger last held; ~292 years before the first time",
    };

    /// The variable's definition.
    pub const fn definition(self) -> Definition {
        match self {
            TriggerVar::Scalar(s) => s.definition(),
            TriggerVar::PerClass(m) => m.definition(),
            TriggerVar::TimeSinceTrigger => Self::TIME_SINCE_TRIGGER,
        }
    }

    /// The CEL name.
    pub const fn name(self) -> &'static str {
        self.definition().name
    }

    /// Every trigger variable: Talos's (the doubles, the maps, the duration, as Talos lists
    /// them), then oomwarden's (the doubles, then the maps).
    pub fn all() -> impl Iterator<Item = TriggerVar> {
        let of = |origin: Origin| {
            all::<Scalar>()
                .map(TriggerVar::Scalar)
                .chain(all::<PerClass>().map(TriggerVar::PerClass))
                .filter(move |v| v.definition().origin == origin)
        };
        of(Origin::Talos)
            .chain(std::iter::once(TriggerVar::TimeSinceTrigger))
            .chain(of(Origin::Oomwarden))
    }

    /// The variable of a name.
    pub fn from_name(name: &str) -> Option<TriggerVar> {
        TriggerVar::all().find(|v| v.name() == name)
    }
}

impl RankingVar {
    /// Every ranking variable.
    pub fn all() -> impl Iterator<Item = RankingVar> {
        all::<RankingVar>()
    }

    /// The variable of a name.
    pub fn from_name(name: &str) -> Option<RankingVar> {
        RankingVar::all().find(|v| v.name() == name)
    }
}

/// Every variable's definition: the trigger's, then the ranking's.
pub fn catalogue() -> impl Iterator<Item = Definition> {
    TriggerVar::all()
        .map(TriggerVar::definition)
        .chain(RankingVar::all().map(RankingVar::definition))
}

impl Scalar {
    /// The node's PSI variable of `kind` and `span`, or its rate.
    pub const fn root_psi(rate: bool, kind: PsiKind, span: PsiSpan) -> Scalar {
        use PsiKind::{Full, Some};
        use PsiSpan::{Avg10, Avg60, Avg300, Total};
        match (rate, kind, span) {
            (false, Some, Avg10) => Scalar::MemorySomeAvg10,
            (false, Some, Avg60) => Scalar::MemorySomeAvg60,
            (false, Some, Avg300) => Scalar::MemorySomeAvg300,
            (false, Some, Total) => Scalar::MemorySomeTotal,
            (false, Full, Avg10) => Scalar::MemoryFullAvg10,
            (false, Full, Avg60) => Scalar::MemoryFullAvg60,
            (false, Full, Avg300) => Scalar::MemoryFullAvg300,
            (false, Full, Total) => Scalar::MemoryFullTotal,
            (true, Some, Avg10) => Scalar::DMemorySomeAvg10,
            (true, Some, Avg60) => Scalar::DMemorySomeAvg60,
            (true, Some, Avg300) => Scalar::DMemorySomeAvg300,
            (true, Some, Total) => Scalar::DMemorySomeTotal,
            (true, Full, Avg10) => Scalar::DMemoryFullAvg10,
            (true, Full, Avg60) => Scalar::DMemoryFullAvg60,
            (true, Full, Avg300) => Scalar::DMemoryFullAvg300,
            (true, Full, Total) => Scalar::DMemoryFullTotal,
        }
    }
}

impl PerClass {
    /// The per-class PSI map of `kind` and `span`, or its rate.
    pub const fn psi(rate: bool, kind: PsiKind, span: PsiSpan) -> PerClass {
        use PsiKind::{Full, Some};
        use PsiSpan::{Avg10, Avg60, Avg300, Total};
        match (rate, kind, span) {
            (false, Some, Avg10) => PerClass::QosMemorySomeAvg10,
            (false, Some, Avg60) => PerClass::QosMemorySomeAvg60,
            (false, Some, Avg300) => PerClass::QosMemorySomeAvg300,
            (false, Some, Total) => PerClass::QosMemorySomeTotal,
            (false, Full, Avg10) => PerClass::QosMemoryFullAvg10,
            (false, Full, Avg60) => PerClass::QosMemoryFullAvg60,
            (false, Full, Avg300) => PerClass::QosMemoryFullAvg300,
            (false, Full, Total) => PerClass::QosMemoryFullTotal,
            (true, Some, Avg10) => PerClass::DQosMemorySomeAvg10,
            (true, Some, Avg60) => PerClass::DQosMemorySomeAvg60,
            (true, Some, Avg300) => PerClass::DQosMemorySomeAvg300,
            (true, Some, Total) => PerClass::DQosMemorySomeTotal,
            (true, Full, Avg10) => PerClass::DQosMemoryFullAvg10,
            (true, Full, Avg60) => PerClass::DQosMemoryFullAvg60,
            (true, Full, Avg300) => PerClass::DQosMemoryFullAvg300,
            (true, Full, Total) => PerClass::DQosMemoryFullTotal,
        }
    }
}

#[cfg(test)]
mod tests {
    use std::collections::HashSet;

    use super::*;

    #[test]
    fn names_are_unique_across_both_environments() {
        let names: Vec<&str> = catalogue().map(|d| d.name).collect();
        let unique: HashSet<&str> = names.iter().copied().collect();
        assert_eq!(names.len(), unique.len(), "{names:?}");
        assert_eq!(TriggerVar::all().count(), 61);
        assert_eq!(RankingVar::all().count(), 21);
    }

    #[test]
    fn talos_has_39_trigger_and_5_ranking_variables() {
        let talos = |env: Env| {
            catalogue()
                .filter(|d| d.env == env && d.origin == Origin::Talos)
                .count()
        };
        assert_eq!(talos(Env::Trigger), 39);
        assert_eq!(talos(Env::Ranking), 5);
    }

    #[test]
    fn a_rate_is_named_d_or_trend_and_says_what_of() {
        for d in catalogue() {
            let rate_unit = matches!(
                d.unit,
                Some(
                    Unit::PercentPerSecond
                        | Unit::MicrosecondsPerSecond
                        | Unit::BytesPerSecond
                        | Unit::PagesPerSecond
                        | Unit::EventsPerSecond
                )
            );
            let rate_name = d.name.starts_with("d_") || d.name.ends_with("_trend");
            assert_eq!(rate_unit, rate_name, "{}", d.name);
            assert_eq!(rate_name, d.rate_of.is_some(), "{}", d.name);
            if let Some(of) = d.rate_of
                && d.name.starts_with("d_")
                && let Some(base) = TriggerVar::from_name(of)
            {
                assert_eq!(d.name.strip_prefix("d_"), Some(base.name()));
                assert_eq!(d.source, base.definition().source, "{}", d.name);
            }
        }
    }

    #[test]
    fn psi_variables_are_named_by_their_kind_and_span() {
        for rate in [false, true] {
            for kind in PsiKind::ALL {
                for span in PsiSpan::ALL {
                    let d = if rate { "d_" } else { "" };
                    let tail = format!("memory_{}_{}", kind.name(), span.name());
                    assert_eq!(
                        Scalar::root_psi(rate, kind, span).name(),
                        format!("{d}{tail}")
                    );
                    assert_eq!(
                        PerClass::psi(rate, kind, span).name(),
                        format!("{d}qos_{tail}")
                    );
                }
            }
        }
    }

    #[test]
    fn types_follow_the_enum() {
        for v in TriggerVar::all() {
            let want = match v {
                TriggerVar::Scalar(_) => VarType::Double,
                TriggerVar::PerClass(_) => VarType::ClassMap,
                TriggerVar::TimeSinceTrigger => VarType::Duration,
            };
            assert_eq!(v.definition().ty, want, "{}", v.name());
            assert_eq!(TriggerVar::from_name(v.name()), Some(v));
        }
        for v in RankingVar::all() {
            assert_eq!(RankingVar::from_name(v.name()), Some(v));
        }
    }
}
