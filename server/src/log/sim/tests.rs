//! The simulated disk's promises: a crash keeps what was synced, a lying disk keeps less, a
//! damaged record in the middle is refused and a torn end is dropped.

use super::*;
use crate::broken::Broken;

/// Appends entries 1..=2 with a sync after each, then crashes: what the reopened log holds.
fn after_two_syncs_and_a_crash(disk: &SimDisk) -> u64 {
    let (mut log, _, _) = SimLog::open(disk).unwrap();
    let syncer = log.syncer().unwrap();
    for i in 1..=2 {
        log.append(&[Entry::noop(i, 1)], HardState { term: 1, vote: 0, commit: i }).unwrap();
        assert_eq!(syncer.sync().unwrap(), i, "every sync reports the index it was asked for");
    }
    disk.crash(false);
    SimLog::open(disk).unwrap().0.span().last
}

#[test]
fn a_lying_disk_keeps_only_what_the_sync_before_the_last_asked_for() {
    assert_eq!(after_two_syncs_and_a_crash(&SimDisk::new()), 2);
    assert_eq!(after_two_syncs_and_a_crash(&SimDisk::with_broken(Some(Broken::AckBeforeDurable))), 1);
    assert_eq!(after_two_syncs_and_a_crash(&SimDisk::with_broken(Some(Broken::PartialMulti))), 2);
}

/// Five synced records, the fourth (index 4) with the bit of its length that makes it
/// reach past the end flipped: recovery must refuse it as corruption (records after it
/// are whole, and index 5 had been acknowledged) and leave the disk as it was, where it
/// used to drop the rest as one torn record. A record torn at the real end is still
/// dropped. (`testkeeper sim --flavor zookeeper --seed 375` found the first.)
#[test]
fn a_damaged_length_in_the_middle_is_corruption_and_a_torn_end_is_not() {
    let disk = SimDisk::new();
    let (mut log, _, _) = SimLog::open(&disk).unwrap();
    let syncer = log.syncer().unwrap();
    let mut starts = Vec::new();
    for i in 1..=5 {
        starts.push(disk.len());
        log.append(&[Entry::noop(i, 1)], HardState { term: 1, vote: 0, commit: 1 }).unwrap();
        syncer.sync().unwrap();
    }
    drop(log);
    disk.crash(false);
    let len = disk.len();
    // The length's third byte: +1 MiB with the flipped bit, far past the end.
    disk.flip_byte(starts[3] + record::HEADER - 2);
    let err = SimLog::open(&disk).err().expect("a damaged length in the middle is refused");
    assert!(matches!(err, LogError::Corrupt { index: 4, .. }), "{err}");
    assert_eq!(disk.len(), len, "a refused start leaves the disk as it was");
    disk.flip_byte(starts[3] + record::HEADER - 2);
    assert_eq!(SimLog::open(&disk).unwrap().0.span().last, 5);

    // A write torn at the end: the sixth record half written.
    let (mut log, _, _) = SimLog::open(&disk).unwrap();
    log.append(&[Entry::noop(6, 1)], HardState { term: 1, vote: 0, commit: 1 }).unwrap();
    drop(log);
    disk.crash(true);
    let (log, _, warnings) = SimLog::open(&disk).unwrap();
    assert_eq!((log.span().last, warnings.len()), (5, 1), "{warnings:?}");
}
