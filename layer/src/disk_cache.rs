//! A size-bounded store of word blobs on disk, keyed by content and shared by
//! every process that uses the same folder (the varying linker's cache of
//! linked pairs, `link_cache`).
//!
//! One file per entry, named by a hash of its key; the file holds the whole
//! key (a hash collision is a miss, never another entry's data), the payload
//! and a checksum of both. Entries are written to a temporary file in the
//! same folder and renamed into place, so a reader sees a whole entry or
//! none, whatever other processes do at the same time; a file that is torn
//! or damaged anyway fails its checks and is reported, never used. When the
//! folder grows past its bound, the least recently used entries (oldest
//! modification time; a hit touches its file) are removed. Nothing here
//! panics or logs: the caller logs what it returns.
//!
//! Opening and reading a file costs tens of microseconds of system calls on
//! the application's thread, a tenth of what a pipeline costs a fast driver
//! to create from its own cache. So [`DiskCache::read_ahead`] reads the
//! newest entries, up to a byte budget, on a thread of its own once the
//! caller first asks (the linker: at its first lookup); a lookup takes its
//! entry from there (checked as a
//! file read then would be) and reads the file itself only when the
//! entry was not read ahead (yet). The thread stops and is joined when the
//! cache is dropped, before the layer can be unloaded.

use parking_lot::Mutex;
use std::collections::HashMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, SystemTime};

/// "OVLC": the first word of every entry.
const MAGIC: u32 = 0x434c_564f;
/// The entry layout below (2: the four-lane checksum); a file of another
/// layout is a miss.
const FORMAT: u32 = 2;
/// Words before the key: magic, format, key length, payload length, checksum (2).
const HEADER: usize = 6;
/// The extension of entries; anything else in the folder is not one.
const EXTENSION: &str = "olc";
/// A hit touches its entry when it is older than this (one stat per hit,
/// a write only now and then).
const TOUCH_AFTER: Duration = Duration::from_secs(3600);
/// Temporary files older than this were left by a process that died.
const STALE_TMP: Duration = Duration::from_secs(600);

pub struct DiskCache {
    dir: PathBuf,
    max_bytes: u64,
    /// Bytes written since the folder was last measured; `u64::MAX` before
    /// the first measurement.
    written: AtomicU64,
    tmp_counter: AtomicU32,
    ahead: Arc<Ahead>,
    reader: Mutex<Option<std::thread::JoinHandle<()>>>,
    /// Whether [`DiskCache::read_ahead`] ran (a lookup's check, no lock).
    read_ahead_started: AtomicBool,
}

/// What [`DiskCache::read_ahead`] read, checked, and the modification time
/// of each entry, by the hash its file is named after; each is given out
/// once.
#[derive(Default)]
struct Ahead {
    stop: AtomicBool,
    entries: Mutex<HashMap<u64, ReadAhead>>,
}

/// Why an entry was not used (the caller logs it as a warning).
#[derive(Debug)]
pub enum Bad {
    /// The file exists but fails its checks.
    Corrupt(PathBuf, &'static str),
    /// The folder or file cannot be read or written.
    Io(PathBuf, std::io::Error),
}

impl std::fmt::Display for Bad {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Bad::Corrupt(p, why) => write!(f, "{} is corrupt ({why})", p.display()),
            Bad::Io(p, e) => write!(f, "{}: {e}", p.display()),
        }
    }
}

const FNV_PRIME: u64 = 0x100_0000_01b3;

/// FNV-1a over words, continuing from `h`.
fn fnv_from(h: u64, words: &[u32]) -> u64 {
    words.iter().fold(h, |h, w| (h ^ *w as u64).wrapping_mul(FNV_PRIME))
}

/// FNV-1a over words: the file name and the checksum (fixed across builds,
/// unlike `DefaultHasher`). Four interleaved lanes, folded at the end: one
/// lane's multiplications wait on each other, four overlap (a lookup hashes
/// its key and checks its entry on the application's thread).
pub fn fnv(words: &[u32]) -> u64 {
    fnv_lanes(0xcbf2_9ce4_8422_2325, words)
}

fn fnv_lanes(seed: u64, words: &[u32]) -> u64 {
    let mut lanes = [seed, seed ^ 1, seed ^ 2, seed ^ 3];
    let chunks = words.chunks_exact(4);
    let tail = chunks.remainder();
    for c in chunks {
        for (h, w) in lanes.iter_mut().zip(c) {
            *h = (*h ^ *w as u64).wrapping_mul(FNV_PRIME);
        }
    }
    let folded = lanes.iter().fold(seed, |h, l| (h ^ l).wrapping_mul(FNV_PRIME));
    fnv_from(folded, tail)
}

fn checksum(key: &[u32], payload: &[u32]) -> u64 {
    // Seeded with the lengths, so moving the boundary changes the sum.
    let h = fnv(&[key.len() as u32, payload.len() as u32]);
    fnv_lanes(fnv_lanes(h, key), payload)
}

/// `$XDG_CACHE_HOME/overlap/<name>` (an absolute `XDG_CACHE_HOME`, else
/// `$HOME/.cache`); `None` without either.
pub fn default_dir(name: &str) -> Option<PathBuf> {
    let xdg = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from).filter(|p| p.is_absolute());
    let base = xdg.or_else(|| {
        std::env::var_os("HOME").map(PathBuf::from).filter(|p| p.is_absolute()).map(|h| h.join(".cache"))
    })?;
    Some(base.join("overlap").join(name))
}

/// An entry read ahead: its words checked (or why not) and its
/// modification time.
type ReadAhead = (Result<Parsed, &'static str>, SystemTime);

/// A file's words, checked.
enum Parsed {
    /// The header, key and payload; the key is `key_len` words after the
    /// header.
    Entry { words: Vec<u32>, key_len: usize },
    /// Written in another layout: a miss.
    OtherFormat,
}

/// Checks a file's bytes: a whole entry with a good checksum, or why not.
fn parse(bytes: &[u8]) -> Result<Parsed, &'static str> {
    if !bytes.len().is_multiple_of(4) || bytes.len() < HEADER * 4 {
        return Err("truncated");
    }
    let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
    if words[0] != MAGIC {
        return Err("bad magic");
    }
    if words[1] != FORMAT {
        return Ok(Parsed::OtherFormat);
    }
    let (key_len, payload_len) = (words[2] as usize, words[3] as usize);
    if HEADER.checked_add(key_len).and_then(|n| n.checked_add(payload_len)) != Some(words.len()) {
        return Err("length");
    }
    let (stored_key, payload) = words[HEADER..].split_at(key_len);
    let sum = words[4] as u64 | (words[5] as u64) << 32;
    if sum != checksum(stored_key, payload) {
        return Err("checksum");
    }
    Ok(Parsed::Entry { words, key_len })
}

impl DiskCache {
    pub fn new(dir: PathBuf, max_bytes: u64) -> DiskCache {
        DiskCache {
            dir,
            max_bytes,
            written: AtomicU64::new(u64::MAX),
            tmp_counter: AtomicU32::new(0),
            ahead: Arc::default(),
            reader: Mutex::new(None),
            read_ahead_started: AtomicBool::new(false),
        }
    }

    /// Reads the newest entries, up to `budget` bytes in all, on a thread
    /// of its own (once per cache; nothing happens when the thread cannot be
    /// made).
    pub fn read_ahead(&self, budget: u64) {
        if self.read_ahead_started.swap(true, Ordering::Relaxed) {
            return;
        }
        let mut reader = self.reader.lock();
        let (dir, ahead) = (self.dir.clone(), self.ahead.clone());
        let read = move || {
            let Ok(listing) = std::fs::read_dir(&dir) else {
                return;
            };
            let mut found: Vec<(SystemTime, u64, PathBuf)> = listing
                .flatten()
                .filter(|e| e.path().extension().is_some_and(|x| x == EXTENSION))
                .filter_map(|e| {
                    let meta = e.metadata().ok().filter(|m| m.is_file())?;
                    Some((meta.modified().unwrap_or(SystemTime::UNIX_EPOCH), meta.len(), e.path()))
                })
                .collect();
            found.sort_by_key(|f| std::cmp::Reverse(f.0));
            let mut total = 0u64;
            for (mtime, len, path) in found {
                if ahead.stop.load(Ordering::Relaxed) {
                    return;
                }
                total = total.saturating_add(len);
                if total > budget {
                    return;
                }
                let name = path.file_stem().and_then(|n| n.to_str()).and_then(|n| u64::from_str_radix(n, 16).ok());
                if let (Ok(bytes), Some(name)) = (std::fs::read(&path), name) {
                    let parsed = parse(&bytes);
                    ahead.entries.lock().insert(name, (parsed, mtime));
                }
            }
        };
        *reader = std::thread::Builder::new().name("overlap-cache".into()).spawn(read).ok();
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &[u32]) -> PathBuf {
        self.path_named(fnv(key))
    }

    fn path_named(&self, name: u64) -> PathBuf {
        self.dir.join(format!("{name:016x}.{EXTENSION}"))
    }

    /// The payload stored under `key`: `Ok(None)` when there is none (or
    /// another key's entry has the same name).
    pub fn get(&self, key: &[u32]) -> Result<Option<Vec<u32>>, Bad> {
        let name = fnv(key);
        let early = self.ahead.entries.lock().remove(&name);
        let (parsed, file, modified) = match early {
            Some((parsed, modified)) => (parsed, None, Some(modified)),
            None => {
                let path = self.path_named(name);
                let mut file = match std::fs::File::open(&path) {
                    Ok(f) => f,
                    Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
                    Err(e) => return Err(Bad::Io(path, e)),
                };
                let mut bytes = Vec::new();
                if let Err(e) = file.read_to_end(&mut bytes) {
                    return Err(Bad::Io(path, e));
                }
                (parse(&bytes), Some(file), None)
            }
        };
        let (mut words, key_len) = match parsed {
            Ok(Parsed::Entry { words, key_len }) => (words, key_len),
            Ok(Parsed::OtherFormat) => return Ok(None), // rewritten on the next store
            Err(why) => return Err(Bad::Corrupt(self.path_named(name), why)),
        };
        if words[HEADER..HEADER + key_len] != *key {
            return Ok(None);
        }
        // Least recently used: a hit is (about) as young as a new entry.
        let now = SystemTime::now();
        let modified = match (&file, modified) {
            (_, Some(t)) => Some(t),
            (Some(f), None) => f.metadata().and_then(|m| m.modified()).ok(),
            (None, None) => None,
        };
        if modified.is_some_and(|t| now.duration_since(t).is_ok_and(|age| age > TOUCH_AFTER)) {
            let opened = match file {
                Some(f) => Ok(f),
                None => std::fs::File::open(self.path_named(name)),
            };
            let _ = opened.and_then(|f| f.set_modified(now));
        }
        words.drain(..HEADER + key_len);
        Ok(Some(words))
    }

    /// Stores `payload` under `key` (replacing what is there), then keeps
    /// the folder under its bound.
    pub fn put(&self, key: &[u32], payload: &[u32]) -> Result<(), Bad> {
        let io = |p: &Path| {
            let p = p.to_path_buf();
            move |e| Bad::Io(p, e)
        };
        std::fs::create_dir_all(&self.dir).map_err(io(&self.dir))?;
        let sum = checksum(key, payload);
        let header = [MAGIC, FORMAT, key.len() as u32, payload.len() as u32, sum as u32, (sum >> 32) as u32];
        let mut bytes = Vec::with_capacity((HEADER + key.len() + payload.len()) * 4);
        for w in header.iter().chain(key).chain(payload) {
            bytes.extend_from_slice(&w.to_le_bytes());
        }
        let n = self.tmp_counter.fetch_add(1, Ordering::Relaxed);
        let tmp = self.dir.join(format!(".tmp-{}-{n}", std::process::id()));
        let written = std::fs::File::create(&tmp).and_then(|mut f| f.write_all(&bytes));
        let path = self.path(key);
        if let Err(e) = written.and_then(|_| std::fs::rename(&tmp, &path)) {
            let _ = std::fs::remove_file(&tmp);
            return Err(Bad::Io(path, e));
        }
        // Measure the folder on the first store of a process, and again
        // after an eighth of the bound was written.
        let before = self.written.load(Ordering::Relaxed);
        if before == u64::MAX || before.saturating_add(bytes.len() as u64) > self.max_bytes / 8 {
            self.written.store(0, Ordering::Relaxed);
            self.trim();
        } else {
            self.written.fetch_add(bytes.len() as u64, Ordering::Relaxed);
        }
        Ok(())
    }

    /// Removes the oldest entries while the folder is over its bound (down to
    /// three quarters of it), and temporary files left by dead processes.
    /// Best effort: another process may remove the same files.
    pub fn trim(&self) {
        let Ok(dir) = std::fs::read_dir(&self.dir) else {
            return;
        };
        let now = SystemTime::now();
        let mut entries = Vec::new();
        let mut total = 0u64;
        for e in dir.flatten() {
            let (path, Ok(meta)) = (e.path(), e.metadata()) else {
                continue;
            };
            let mtime = meta.modified().unwrap_or(SystemTime::UNIX_EPOCH);
            let name = e.file_name();
            if name.to_string_lossy().starts_with(".tmp-") {
                if now.duration_since(mtime).is_ok_and(|age| age > STALE_TMP) {
                    let _ = std::fs::remove_file(&path);
                }
            } else if meta.is_file() && path.extension().is_some_and(|x| x == EXTENSION) {
                total += meta.len();
                entries.push((mtime, meta.len(), path));
            }
        }
        if total <= self.max_bytes {
            return;
        }
        entries.sort();
        for (_, len, path) in entries {
            if total <= self.max_bytes / 4 * 3 {
                break;
            }
            if std::fs::remove_file(&path).is_ok() {
                total -= len;
            }
        }
    }
}

impl Drop for DiskCache {
    fn drop(&mut self) {
        self.ahead.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.reader.get_mut().take() {
            let _ = t.join();
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scratch(name: &str) -> PathBuf {
        let d = std::env::temp_dir().join(format!("overlap-disk-cache-{}-{name}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        d
    }

    #[test]
    fn round_trip_and_miss() {
        let c = DiskCache::new(scratch("rt"), 1 << 20);
        assert!(c.get(&[1, 2]).unwrap().is_none());
        c.put(&[1, 2], &[7, 8, 9]).unwrap();
        assert_eq!(c.get(&[1, 2]).unwrap(), Some(vec![7, 8, 9]));
        assert!(c.get(&[1, 3]).unwrap().is_none());
        let _ = std::fs::remove_dir_all(c.dir());
    }

    #[test]
    fn damage_is_reported() {
        let c = DiskCache::new(scratch("bad"), 1 << 20);
        c.put(&[5], &[1, 2, 3, 4]).unwrap();
        let path = c.path(&[5]);
        let good = std::fs::read(&path).unwrap();
        let mut flipped = good.clone();
        *flipped.last_mut().unwrap() ^= 1;
        for (bytes, why) in
            [(&good[..good.len() - 4], "length"), (&good[..10], "truncated"), (&flipped[..], "checksum")]
        {
            std::fs::write(&path, bytes).unwrap();
            assert!(matches!(c.get(&[5]), Err(Bad::Corrupt(_, w)) if w == why), "{why}");
        }
        std::fs::write(&path, [0u8; 64]).unwrap();
        assert!(matches!(c.get(&[5]), Err(Bad::Corrupt(_, "bad magic"))));
        // A store replaces the bad entry.
        c.put(&[5], &[1]).unwrap();
        assert_eq!(c.get(&[5]).unwrap(), Some(vec![1]));
        let _ = std::fs::remove_dir_all(c.dir());
    }

    /// Waits for the read-ahead thread to finish.
    fn finish_reading(c: &DiskCache) {
        if let Some(t) = c.reader.lock().take() {
            t.join().unwrap();
        }
    }

    #[test]
    fn entries_read_ahead_are_checked_and_given_out_once() {
        let dir = scratch("ahead");
        let writer = DiskCache::new(dir.clone(), 1 << 20);
        for k in 0..4u32 {
            writer.put(&[k], &[k + 10; 3]).unwrap();
        }
        let c = DiskCache::new(dir.clone(), 1 << 20);
        c.read_ahead(1 << 20);
        finish_reading(&c);
        // Damage one entry read ahead and remove the other files: what was
        // read ahead is still checked, the rest is gone.
        let mut bytes = std::fs::read(c.path(&[3])).unwrap();
        bytes[36] ^= 1;
        c.ahead.entries.lock().get_mut(&fnv(&[3])).unwrap().0 = parse(&bytes);
        for k in 0..4u32 {
            std::fs::remove_file(c.path(&[k])).unwrap();
        }
        assert_eq!(c.get(&[0]).unwrap(), Some(vec![10; 3]));
        assert_eq!(c.get(&[2]).unwrap(), Some(vec![12; 3]));
        assert!(matches!(c.get(&[3]), Err(Bad::Corrupt(_, "checksum"))));
        // Given out once: the second lookup goes to the (now empty) folder.
        assert!(c.get(&[0]).unwrap().is_none());
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn reading_ahead_keeps_to_its_budget_newest_first() {
        let dir = scratch("budget");
        let writer = DiskCache::new(dir.clone(), 1 << 20);
        let old = SystemTime::now() - Duration::from_secs(100);
        for k in 0..8u32 {
            writer.put(&[k], &[0; 64]).unwrap();
            // Entry k is k seconds younger than the first.
            let f = std::fs::File::open(writer.path(&[k])).unwrap();
            f.set_modified(old + Duration::from_secs(k as u64)).unwrap();
        }
        let one = std::fs::metadata(writer.path(&[0])).unwrap().len();
        let c = DiskCache::new(dir.clone(), 1 << 20);
        c.read_ahead(3 * one);
        finish_reading(&c);
        let mut names: Vec<u64> = c.ahead.entries.lock().keys().cloned().collect();
        names.sort();
        let mut newest: Vec<u64> = (5..8u32).map(|k| fnv(&[k])).collect();
        newest.sort();
        assert_eq!(names, newest);
        let _ = std::fs::remove_dir_all(&dir);
    }

    #[test]
    fn the_folder_stays_under_its_bound() {
        let c = DiskCache::new(scratch("bound"), 4096);
        for k in 0..40u32 {
            c.put(&[k], &[0; 64]).unwrap();
            c.trim();
            let total: u64 = std::fs::read_dir(c.dir()).unwrap().flatten().map(|e| e.metadata().unwrap().len()).sum();
            assert!(total <= 4096, "{total}");
        }
        // The newest entry survives.
        assert!(c.get(&[39]).unwrap().is_some());
        let _ = std::fs::remove_dir_all(c.dir());
    }
}
