//! QoS classes (Talos `runtime.QoSCgroupClass`).

use std::fmt;

/// The class of a cgroup. Lower values are less important and are killed first under strict
/// class ordering. The integer values are the CEL constants `Besteffort` (0) … `System` (4).
/// In JSON (action records) a class is its name: `"Besteffort"` … `"System"`.
#[derive(
    Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, serde::Serialize, serde::Deserialize,
)]
pub enum QosClass {
    /// Kubernetes BestEffort pods.
    Besteffort = 0,
    /// Kubernetes Burstable pods.
    Burstable = 1,
    /// Kubernetes Guaranteed pods.
    Guaranteed = 2,
    /// Container runtime, CRI shims, kubelet, etcd.
    Podruntime = 3,
    /// Node services (and `init` for metrics only).
    System = 4,
}

impl QosClass {
    /// Every class, in kill order (least important first).
    pub const ALL: [QosClass; 5] = [
        QosClass::Besteffort,
        QosClass::Burstable,
        QosClass::Guaranteed,
        QosClass::Podruntime,
        QosClass::System,
    ];

    /// The CEL constant value of this class.
    pub fn as_i64(self) -> i64 {
        self as i64
    }

    /// The position of this class in [`QosClass::ALL`].
    pub fn index(self) -> usize {
        self as usize
    }

    /// The class with the given CEL constant value.
    pub fn from_i64(value: i64) -> Option<QosClass> {
        QosClass::ALL.into_iter().find(|c| c.as_i64() == value)
    }

    /// The CEL constant name (`Besteffort`, `Burstable`, …).
    pub fn name(self) -> &'static str {
        match self {
            QosClass::Besteffort => "Besteffort",
            QosClass::Burstable => "Burstable",
            QosClass::Guaranteed => "Guaranteed",
            QosClass::Podruntime => "Podruntime",
            QosClass::System => "System",
        }
    }
}

impl fmt::Display for QosClass {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_match_talos_constants() {
        let pairs: Vec<(&str, i64)> = QosClass::ALL
            .iter()
            .map(|c| (c.name(), c.as_i64()))
            .collect();
        assert_eq!(
            pairs,
            [
                ("Besteffort", 0),
                ("Burstable", 1),
                ("Guaranteed", 2),
                ("Podruntime", 3),
                ("System", 4)
            ]
        );
        for c in QosClass::ALL {
            assert_eq!(QosClass::from_i64(c.as_i64()), Some(c));
            assert_eq!(QosClass::ALL[c.index()], c);
        }
        assert_eq!(QosClass::from_i64(5), None);
        assert_eq!(QosClass::from_i64(-1), None);
    }
}
