//! The barman-cloud catalog, pure: `backup.info` files as barman's JSON shows them, WAL file
//! names, and the WAL archive of each timeline kept as runs of consecutive segments (memory
//! grows with the gaps, not with the segments).

use std::collections::BTreeMap;

use jiff::civil::{Date, DateTime};
use pgtoolbox_api::evidence::{
    BackupFields, BarmanValue, Evidence, RecoveryWindow, TimelineArchive, WalGap,
};

/// barman's default segment size (16 MiB), used when no backup states another.
pub const DEFAULT_SEGMENT_SIZE: u64 = 16 * 1024 * 1024;

/// The suffixes barman-cloud compresses WAL files with (barman's `ALLOWED_COMPRESSIONS`).
const COMPRESSIONS: [&str; 6] = [".gz", ".bz2", ".xz", ".snappy", ".zst", ".lz4"];

/// `backup.info` fields barman loads as integers (the rest are strings, or times).
const INTEGER_FIELDS: [&str; 8] = [
    "version",
    "timeline",
    "begin_offset",
    "size",
    "deduplicated_size",
    "end_offset",
    "xlog_segment_size",
    "cluster_size",
];

/// Fields barman reads as Python literals (`ast.literal_eval`) and shows as JSON lists or
/// objects (`BackupInfo.to_json`); `backup_label` is a literal too, but barman shows it as
/// the `repr()` it was written as, so it stays text.
const LITERAL_FIELDS: [&str; 4] = [
    "tablespaces",
    "included_files",
    "copy_stats",
    "snapshots_info",
];

/// Every field of barman's `BackupInfo` (barman 3.19): its JSON shows each one, `null` when
/// the file has none, but for these defaults.
const BACKUP_INFO_FIELDS: [&str; 35] = [
    "backup_label",
    "backup_name",
    "begin_offset",
    "begin_time",
    "begin_wal",
    "begin_xlog",
    "children_backup_ids",
    "cluster_size",
    "compression",
    "config_file",
    "copy_stats",
    "data_checksums",
    "deduplicated_size",
    "encryption",
    "end_offset",
    "end_time",
    "end_wal",
    "end_xlog",
    "error",
    "hba_file",
    "ident_file",
    "included_files",
    "mode",
    "parent_backup_id",
    "pgdata",
    "server_name",
    "size",
    "snapshots_info",
    "status",
    "summarize_wal",
    "systemid",
    "tablespaces",
    "timeline",
    "version",
    "xlog_segment_size",
];

/// Fields barman leaves out of its JSON when they are null.
const HIDDEN_IF_NULL: [&str; 2] = ["backup_name", "snapshots_info"];

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum InfoError {
    #[error("line {line} is not key=value")]
    Line { line: usize },
    #[error("{field}={value:?} is not an integer")]
    Integer { field: String, value: String },
    #[error("{field}={value:?} is not a time barman writes")]
    Time { field: String, value: String },
    #[error("{field}: {source}")]
    Literal {
        field: String,
        source: crate::literal::LiteralError,
    },
    #[error("the file is not UTF-8")]
    Utf8,
}

/// Parses a `backup.info` into barman's JSON fields for `backup_id` (the directory name, as
/// barman names the backup): the values `barman-cloud-backup-list --format json` gives.
pub fn parse_backup_info(backup_id: &str, bytes: &[u8]) -> Result<BackupFields, InfoError> {
    let text = std::str::from_utf8(bytes).map_err(|_| InfoError::Utf8)?;
    let mut fields = BackupFields::new();
    for (n, line) in text.lines().enumerate() {
        if line.trim().is_empty() || line.trim_start().starts_with('#') {
            continue;
        }
        let Some((key, value)) = line.split_once('=') else {
            return Err(InfoError::Line { line: n + 1 });
        };
        let (key, value) = (key.trim(), value.trim());
        if value == "None" {
            fields.insert(key.to_owned(), None);
            continue;
        }
        if LITERAL_FIELDS.contains(&key) {
            let literal = crate::literal::parse(value).map_err(|source| InfoError::Literal {
                field: key.to_owned(),
                source,
            })?;
            // barman's tablespace loader turns an empty list into None.
            let empty = matches!(&literal, serde_json::Value::Array(a) if a.is_empty());
            let shown = match literal {
                serde_json::Value::Null => None,
                _ if empty && key == "tablespaces" => None,
                v => Some(BarmanValue::Literal(v)),
            };
            fields.insert(key.to_owned(), shown);
        } else if INTEGER_FIELDS.contains(&key) {
            let number = value.parse::<i64>().map_err(|_| InfoError::Integer {
                field: key.to_owned(),
                value: value.to_owned(),
            })?;
            fields.insert(key.to_owned(), Some(BarmanValue::Integer(number)));
        } else if key == "begin_time" || key == "end_time" {
            let time = BarmanTime::parse(value).ok_or_else(|| InfoError::Time {
                field: key.to_owned(),
                value: value.to_owned(),
            })?;
            fields.insert(key.to_owned(), Some(BarmanValue::Text(time.ctime())));
            fields.insert(format!("{key}_iso"), Some(BarmanValue::Text(time.iso())));
        } else {
            fields.insert(key.to_owned(), Some(BarmanValue::Text(value.to_owned())));
        }
    }
    for field in BACKUP_INFO_FIELDS {
        let default = match field {
            "status" => Some(BarmanValue::Text("EMPTY".into())),
            "xlog_segment_size" => Some(BarmanValue::Integer(
                i64::try_from(DEFAULT_SEGMENT_SIZE).unwrap_or(i64::MAX),
            )),
            _ => None,
        };
        // A field the file sets to None stays null (barman's `Field` defaults only unset ones).
        fields.entry(field.to_owned()).or_insert(default);
    }
    fields.retain(|k, v| v.is_some() || !HIDDEN_IF_NULL.contains(&k.as_str()));
    fields.insert(
        "backup_id".into(),
        Some(BarmanValue::Text(backup_id.to_owned())),
    );
    Ok(fields)
}

/// A time as barman writes it (`str()` of an aware datetime:
/// `2026-12-07 16:20:01.123456+00:00`, the fraction only when not zero).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BarmanTime {
    local: DateTime,
    /// `+HH:MM`, as written.
    offset: String,
    offset_seconds: i32,
}

impl BarmanTime {
    pub fn parse(text: &str) -> Option<Self> {
        let text = text.trim();
        let split = text.rfind(['+', '-']).filter(|i| *i > 10)?;
        let (local, offset) = text.split_at(split);
        let local: DateTime = local.trim().replacen(' ', "T", 1).parse().ok()?;
        let sign = if offset.starts_with('-') { -1 } else { 1 };
        let (h, m) = offset[1..].split_once(':')?;
        let (h, m): (i32, i32) = (h.parse().ok()?, m.parse().ok()?);
        Some(Self {
            local,
            offset: offset.to_owned(),
            offset_seconds: sign * (h * 3600 + m * 60),
        })
    }

    /// Python's `datetime.ctime()`: `Mon Dec  7 16:20:01 2026` (the datetime's own wall clock).
    pub fn ctime(&self) -> String {
        const DAYS: [&str; 7] = ["Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun"];
        const MONTHS: [&str; 12] = [
            "Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec",
        ];
        let date: Date = self.local.date();
        let day = DAYS[usize::from(date.weekday().to_monday_zero_offset().unsigned_abs())];
        let month = MONTHS[usize::from(date.month().unsigned_abs()) - 1];
        format!(
            "{day} {month} {:>2} {:02}:{:02}:{:02} {:04}",
            date.day(),
            self.local.hour(),
            self.local.minute(),
            self.local.second(),
            date.year()
        )
    }

    /// Python's `datetime.isoformat()`.
    pub fn iso(&self) -> String {
        let t = self.local;
        let micros = t.subsec_nanosecond() / 1000;
        let fraction = if micros == 0 {
            String::new()
        } else {
            format!(".{micros:06}")
        };
        format!(
            "{:04}-{:02}-{:02}T{:02}:{:02}:{:02}{fraction}{}",
            t.year(),
            t.month(),
            t.day(),
            t.hour(),
            t.minute(),
            t.second(),
            self.offset
        )
    }

    /// Seconds since the epoch.
    pub fn epoch_seconds(&self) -> Option<i64> {
        let utc = jiff::tz::TimeZone::UTC.to_timestamp(self.local).ok()?;
        Some(utc.as_second() - i64::from(self.offset_seconds))
    }
}

/// What a file name under `wals/` is (barman's `is_any_xlog_file`, with one compression
/// suffix allowed).
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum WalFile {
    Segment { timeline: u32, log: u32, seg: u32 },
    Partial { timeline: u32, name: String },
    BackupLabel { timeline: u32 },
    History { timeline: u32, name: String },
}

fn hex8(s: &str) -> Option<u32> {
    (s.len() == 8 && s.bytes().all(|b| b.is_ascii_hexdigit()))
        .then(|| u32::from_str_radix(s, 16).ok())
        .flatten()
}

/// Classifies a WAL archive object's base name; `None` for anything barman would ignore.
pub fn classify_wal(base: &str) -> Option<WalFile> {
    let name = COMPRESSIONS
        .iter()
        .find_map(|suffix| base.strip_suffix(suffix))
        .filter(|stem| classify_plain(stem).is_some())
        .unwrap_or(base);
    classify_plain(name)
}

fn classify_plain(name: &str) -> Option<WalFile> {
    if let Some(tli) = name.strip_suffix(".history") {
        return Some(WalFile::History {
            timeline: hex8(tli)?,
            name: name.to_owned(),
        });
    }
    if name.len() < 24 || !name.is_char_boundary(24) {
        return None;
    }
    let (segment, rest) = name.split_at(24);
    let timeline = hex8(&segment[..8])?;
    let log = hex8(&segment[8..16])?;
    let seg = hex8(&segment[16..24])?;
    match rest {
        "" => Some(WalFile::Segment { timeline, log, seg }),
        ".partial" => Some(WalFile::Partial {
            timeline,
            name: name.to_owned(),
        }),
        _ => {
            let offset = rest.strip_prefix('.')?.strip_suffix(".backup")?;
            hex8(offset).map(|_| WalFile::BackupLabel { timeline })
        }
    }
}

/// The name of segment `number` of `timeline` for a segment size.
pub fn segment_name(timeline: u32, number: u64, segment_size: u64) -> String {
    let per_log = segments_per_log(segment_size);
    format!(
        "{timeline:08X}{:08X}{:08X}",
        number / per_log,
        number % per_log
    )
}

fn segments_per_log(segment_size: u64) -> u64 {
    (0x1_0000_0000 / segment_size.max(1)).max(1)
}

/// The archive of one timeline: runs of consecutive segment numbers, inclusive.
#[derive(Clone, Debug, Default)]
struct Runs {
    runs: Vec<(u64, u64)>,
    segments: u64,
    partial: Vec<String>,
    labels: u64,
}

impl Runs {
    fn insert(&mut self, n: u64) {
        // Listings come in name order, so the common case appends to the last run.
        if let Some(last) = self.runs.last_mut() {
            if n == last.1 + 1 {
                last.1 = n;
                self.segments += 1;
                return;
            }
            if n > last.1 + 1 {
                self.runs.push((n, n));
                self.segments += 1;
                return;
            }
        }
        // Out of order (or a duplicate under another compression): find its place.
        let i = self.runs.partition_point(|r| r.1 < n);
        if self.runs.get(i).is_some_and(|r| r.0 <= n) {
            return;
        }
        self.segments += 1;
        let joins_prev = i > 0 && self.runs[i - 1].1 + 1 == n;
        let joins_next = self.runs.get(i).is_some_and(|r| r.0 == n + 1);
        match (joins_prev, joins_next) {
            (true, true) => {
                self.runs[i - 1].1 = self.runs[i].1;
                self.runs.remove(i);
            }
            (true, false) => self.runs[i - 1].1 = n,
            (false, true) => self.runs[i].0 = n,
            (false, false) => self.runs.insert(i, (n, n)),
        }
    }
}

/// What one read of the store found, fed object by object.
#[derive(Debug, Default)]
pub struct Catalog {
    timelines: BTreeMap<u32, Runs>,
    history: Vec<String>,
    /// The newest full segment seen, with its modification time (RFC 3339), per timeline.
    newest: BTreeMap<u32, (u64, String)>,
    /// The segment size WAL names are numbered with ([`Catalog::backups_read`]).
    segment_size: Option<u64>,
    pub backups: Vec<BackupFields>,
    pub unreadable_backups: Vec<String>,
    pub objects: u64,
}

impl Catalog {
    /// One object under `wals/`: its base name and modification time.
    pub fn add_wal(&mut self, base: &str, modified: &str) {
        self.objects += 1;
        match classify_wal(base) {
            Some(WalFile::Segment { timeline, log, seg }) => {
                let per_log = segments_per_log(self.segment_size());
                let n = u64::from(log) * per_log + u64::from(seg);
                self.timelines.entry(timeline).or_default().insert(n);
                match self.newest.get_mut(&timeline) {
                    Some(newest) if n < newest.0 => {}
                    Some(newest) => *newest = (n, modified.to_owned()),
                    None => {
                        self.newest.insert(timeline, (n, modified.to_owned()));
                    }
                }
            }
            Some(WalFile::Partial { timeline, name }) => {
                self.timelines
                    .entry(timeline)
                    .or_default()
                    .partial
                    .push(name);
            }
            Some(WalFile::BackupLabel { timeline }) => {
                self.timelines.entry(timeline).or_default().labels += 1;
            }
            Some(WalFile::History { name, .. }) => self.history.push(name),
            None => {}
        }
    }

    /// Called once every `backup.info` was read, before the WAL archive is listed: fixes
    /// the segment size the backups state (barman's `xlog_segment_size`), else the default.
    pub fn backups_read(&mut self) {
        self.segment_size = Some(self.stated_segment_size());
    }

    fn segment_size(&self) -> u64 {
        self.segment_size.unwrap_or(DEFAULT_SEGMENT_SIZE)
    }

    fn stated_segment_size(&self) -> u64 {
        self.backups
            .iter()
            .rev()
            .find_map(|b| match b.get("xlog_segment_size") {
                Some(Some(BarmanValue::Integer(n))) if *n > 0 => Some(n.unsigned_abs()),
                _ => None,
            })
            .unwrap_or(DEFAULT_SEGMENT_SIZE)
    }

    /// The evidence this read amounts to.
    pub fn evidence(mut self, destination_path: &str, server_name: &str) -> Evidence {
        let segment_size = self.segment_size();
        self.backups
            .sort_by(|a, b| text(a, "backup_id").cmp(&text(b, "backup_id")));
        let newest_with = |status: &str| {
            self.backups
                .iter()
                .rev()
                .find(|b| text(b, "status") == Some(status))
                .and_then(|b| text(b, "backup_id"))
                .map(str::to_owned)
        };
        let last_successful_backup = newest_with("DONE");
        let last_failed_backup = newest_with("FAILED");
        let first_recoverability_point = self
            .backups
            .iter()
            .find(|b| text(b, "status") == Some("DONE"))
            .and_then(|b| text(b, "end_time_iso"))
            .map(str::to_owned);
        let wal: Vec<TimelineArchive> = self
            .timelines
            .iter()
            .map(|(&timeline, runs)| {
                let name = |n: u64| segment_name(timeline, n, segment_size);
                TimelineArchive {
                    timeline,
                    segments: runs.segments,
                    first_segment: runs.runs.first().map(|r| name(r.0)),
                    last_segment: runs.runs.last().map(|r| name(r.1)),
                    gaps: runs
                        .runs
                        .windows(2)
                        .map(|w| WalGap {
                            from: name(w[0].1 + 1),
                            to: name(w[1].0 - 1),
                            missing_segments: w[1].0 - w[0].1 - 1,
                        })
                        .collect(),
                    partial_files: runs.partial.clone(),
                    backup_label_files: runs.labels,
                }
            })
            .collect();
        let last = self.newest.iter().next_back();
        let recovery_window =
            (first_recoverability_point.is_some() || last.is_some()).then(|| RecoveryWindow {
                first_recoverability_point,
                last_archived_wal: last.map(|(&t, (n, _))| segment_name(t, *n, segment_size)),
                last_archived_wal_time: last.map(|(_, (_, time))| time.clone()),
            });
        self.history.sort();
        Evidence {
            destination_path: destination_path.to_owned(),
            server_name: server_name.to_owned(),
            object_store: None,
            read: Default::default(),
            backups: self.backups,
            unreadable_backups: self.unreadable_backups,
            wal,
            history_files: self.history,
            recovery_window,
            last_successful_backup,
            last_failed_backup,
        }
    }
}

/// A string field of a backup.
pub fn text<'a>(backup: &'a BackupFields, field: &str) -> Option<&'a str> {
    match backup.get(field) {
        Some(Some(BarmanValue::Text(s))) => Some(s),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const INFO: &str =
        "backup_label='START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\\n'
begin_offset=40
begin_time=2026-12-07 16:20:01.123456+00:00
begin_wal=000000010000000000000002
begin_xlog=0/2000028
backup_name=None
children_backup_ids=None
compression=None
copy_stats={'total_time': 1.5}
end_time=2026-12-07 16:20:03+01:00
end_wal=000000010000000000000002
error=None
included_files=None
server_name=cloud
size=12345
status=DONE
systemid=7123456789012345678
tablespaces=None
timeline=1
version=150000
xlog_segment_size=16777216
";

    #[test]
    fn backup_info_as_barman_json_shows_it() {
        let f = parse_backup_info("20261207T162001", INFO.as_bytes()).expect("parses");
        let s = |v: &str| Some(BarmanValue::Text(v.into()));
        assert_eq!(f["backup_id"], s("20261207T162001"));
        assert_eq!(f["begin_time"], s("Mon Dec  7 16:20:01 2026"));
        assert_eq!(f["begin_time_iso"], s("2026-12-07T16:20:01.123456+00:00"));
        assert_eq!(f["end_time_iso"], s("2026-12-07T16:20:03+01:00"));
        assert_eq!(f["size"], Some(BarmanValue::Integer(12345)));
        assert_eq!(f["timeline"], Some(BarmanValue::Integer(1)));
        assert_eq!(f["error"], None);
        assert_eq!(f["systemid"], s("7123456789012345678"));
        assert!(!f.contains_key("backup_name"), "hidden when null");
        assert_eq!(
            f["copy_stats"],
            Some(BarmanValue::Literal(serde_json::json!({"total_time": 1.5})))
        );
        assert_eq!(f["tablespaces"], None);
        assert_eq!(
            f["mode"], None,
            "a field the file lacks is null, as in barman's JSON"
        );
        assert_eq!(
            f["backup_label"],
            s("'START WAL LOCATION: 0/2000028 (file 000000010000000000000002)\\n'")
        );
    }

    /// `testdata/*.backup.info` are backup.info files the real tier's barman-cloud-backup wrote
    /// (a DONE one, given the `tablespaces` and `included_files` a Cluster with tablespaces
    /// and included configuration has, and a FAILED one); `*.barman.json` is what barman
    /// 3.19's own `BackupInfo(id).load(...).to_json()`, which `barman-cloud-backup-list
    /// --format json` prints, makes of each.
    #[test]
    fn every_field_is_served_as_barman_json_gives_it() {
        for (name, id, info, barman) in [
            (
                "done",
                "20261207T201821",
                include_str!("../testdata/done.backup.info"),
                include_str!("../testdata/done.barman.json"),
            ),
            (
                "failed",
                "20261207T201848",
                include_str!("../testdata/failed.backup.info"),
                include_str!("../testdata/failed.barman.json"),
            ),
        ] {
            let ours = parse_backup_info(id, info.as_bytes()).expect("parses");
            let ours = serde_json::to_value(&ours).expect("JSON");
            let theirs: serde_json::Value = serde_json::from_str(barman).expect("barman's JSON");
            assert_eq!(ours, theirs, "{name}");
        }
    }

    #[test]
    fn python_literals_that_are_no_literal_make_the_backup_unreadable() {
        let bad = parse_backup_info("x", b"status=DONE\ntablespaces=[('a', 1\n");
        assert!(matches!(bad, Err(InfoError::Literal { .. })), "{bad:?}");
    }

    #[test]
    fn backup_info_errors_are_typed() {
        assert_eq!(
            parse_backup_info("x", b"size=big\n"),
            Err(InfoError::Integer {
                field: "size".into(),
                value: "big".into()
            })
        );
        assert_eq!(
            parse_backup_info("x", b"no equals sign\n"),
            Err(InfoError::Line { line: 1 })
        );
        assert!(matches!(
            parse_backup_info("x", b"begin_time=yesterday\n"),
            Err(InfoError::Time { .. })
        ));
    }

    #[test]
    fn times_convert_like_python() {
        let t = BarmanTime::parse("2026-01-15 03:04:05-05:30").expect("time");
        assert_eq!(t.ctime(), "Thu Jan 15 03:04:05 2026");
        assert_eq!(t.iso(), "2026-01-15T03:04:05-05:30");
        assert_eq!(
            t.epoch_seconds(),
            Some(
                "2026-01-15T08:34:05Z"
                    .parse::<jiff::Timestamp>()
                    .expect("ts")
                    .as_second()
            )
        );
    }

    #[test]
    fn wal_names_are_classified_as_barman_does() {
        assert_eq!(
            classify_wal("0000000100000000000000A1.gz"),
            Some(WalFile::Segment {
                timeline: 1,
                log: 0,
                seg: 0xA1
            })
        );
        assert!(matches!(
            classify_wal("000000020000000000000003.partial.zst"),
            Some(WalFile::Partial { timeline: 2, .. })
        ));
        assert_eq!(
            classify_wal("000000010000000000000002.00000028.backup"),
            Some(WalFile::BackupLabel { timeline: 1 })
        );
        assert!(matches!(
            classify_wal("00000002.history"),
            Some(WalFile::History { timeline: 2, .. })
        ));
        assert_eq!(classify_wal("000000010000000000000002.tmp"), None);
        assert_eq!(classify_wal("README"), None);
        assert_eq!(classify_wal("00000001000000000000000G"), None);
    }

    fn wal_evidence(names: &[&str]) -> Evidence {
        let mut c = Catalog::default();
        for n in names {
            c.add_wal(n, "2026-12-07T16:00:00Z");
        }
        c.evidence("s3://b", "s")
    }

    #[test]
    fn gaps_are_the_missing_ranges_across_log_boundaries() {
        let e = wal_evidence(&[
            "0000000100000000000000FE",
            "000000010000000100000000",
            "000000010000000100000003",
            "000000010000000100000004",
        ]);
        let tl = &e.wal[0];
        assert_eq!(tl.segments, 4);
        assert_eq!(
            tl.first_segment.as_deref(),
            Some("0000000100000000000000FE")
        );
        assert_eq!(tl.last_segment.as_deref(), Some("000000010000000100000004"));
        assert_eq!(
            tl.gaps,
            vec![
                WalGap {
                    from: "0000000100000000000000FF".into(),
                    to: "0000000100000000000000FF".into(),
                    missing_segments: 1
                },
                WalGap {
                    from: "000000010000000100000001".into(),
                    to: "000000010000000100000002".into(),
                    missing_segments: 2
                }
            ]
        );
        let w = e.recovery_window.expect("window");
        assert_eq!(
            w.last_archived_wal.as_deref(),
            Some("000000010000000100000004")
        );
    }

    #[test]
    fn out_of_order_and_duplicate_segments_merge() {
        let e = wal_evidence(&[
            "000000010000000000000005",
            "000000010000000000000001",
            "000000010000000000000003",
            "000000010000000000000002.gz",
            "000000010000000000000002",
            "000000010000000000000004",
        ]);
        assert_eq!(e.wal[0].segments, 5);
        assert!(e.wal[0].gaps.is_empty());
    }

    #[test]
    fn timelines_partial_and_history_are_kept_apart() {
        let e = wal_evidence(&[
            "000000010000000000000001",
            "000000010000000000000002.partial",
            "00000002.history",
            "000000020000000000000002",
        ]);
        assert_eq!(e.wal.len(), 2);
        assert_eq!(
            e.wal[0].partial_files,
            vec!["000000010000000000000002.partial"]
        );
        assert_eq!(e.history_files, vec!["00000002.history"]);
        assert_eq!(
            e.recovery_window
                .and_then(|w| w.last_archived_wal)
                .as_deref(),
            Some("000000020000000000000002")
        );
    }

    #[test]
    fn last_successful_and_failed_backups() {
        let mut c = Catalog::default();
        for (id, status) in [
            ("20261201T000000", "DONE"),
            ("20261203T000000", "FAILED"),
            ("20261202T000000", "DONE"),
        ] {
            let info = format!("status={status}\nend_time=2026-12-01 00:00:00+00:00\n");
            c.backups
                .push(parse_backup_info(id, info.as_bytes()).expect("info"));
        }
        let e = c.evidence("s3://b", "s");
        assert_eq!(e.last_successful_backup.as_deref(), Some("20261202T000000"));
        assert_eq!(e.last_failed_backup.as_deref(), Some("20261203T000000"));
        assert_eq!(
            e.recovery_window
                .and_then(|w| w.first_recoverability_point)
                .as_deref(),
            Some("2026-12-01T00:00:00+00:00")
        );
    }
}
