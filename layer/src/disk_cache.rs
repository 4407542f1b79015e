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

use std::io::{Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::time::{Duration, SystemTime};

/// "OVLC": the first word of every entry.
const MAGIC: u32 = 0x434c_564f;
/// The entry layout below; a file of another layout is a miss.
const FORMAT: u32 = 1;
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

/// FNV-1a over words: the file name and the checksum (fixed across builds,
/// unlike `DefaultHasher`).
pub fn fnv(words: &[u32]) -> u64 {
    words.iter().fold(0xcbf2_9ce4_8422_2325u64, |h, w| (h ^ *w as u64).wrapping_mul(0x100_0000_01b3))
}

fn checksum(key: &[u32], payload: &[u32]) -> u64 {
    // Seeded with the lengths, so moving the boundary changes the sum.
    let seed = [key.len() as u32, payload.len() as u32];
    let h = fnv(&seed);
    let h = key.iter().fold(h, |h, w| (h ^ *w as u64).wrapping_mul(0x100_0000_01b3));
    payload.iter().fold(h, |h, w| (h ^ *w as u64).wrapping_mul(0x100_0000_01b3))
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

impl DiskCache {
    pub fn new(dir: PathBuf, max_bytes: u64) -> DiskCache {
        DiskCache { dir, max_bytes, written: AtomicU64::new(u64::MAX), tmp_counter: AtomicU32::new(0) }
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    fn path(&self, key: &[u32]) -> PathBuf {
        self.dir.join(format!("{:016x}.{EXTENSION}", fnv(key)))
    }

    /// The payload stored under `key`: `Ok(None)` when there is none (or
    /// another key's entry has the same name).
    pub fn get(&self, key: &[u32]) -> Result<Option<Vec<u32>>, Bad> {
        let path = self.path(key);
        let mut file = match std::fs::File::open(&path) {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Bad::Io(path, e)),
        };
        let mut bytes = Vec::new();
        if let Err(e) = file.read_to_end(&mut bytes) {
            return Err(Bad::Io(path, e));
        }
        let corrupt = |why| Err(Bad::Corrupt(path.clone(), why));
        if bytes.len() % 4 != 0 || bytes.len() < HEADER * 4 {
            return corrupt("truncated");
        }
        let words: Vec<u32> = bytes.chunks_exact(4).map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]])).collect();
        if words[0] != MAGIC {
            return corrupt("bad magic");
        }
        if words[1] != FORMAT {
            return Ok(None); // another layout: rewritten on the next store
        }
        let (key_len, payload_len) = (words[2] as usize, words[3] as usize);
        if HEADER.checked_add(key_len).and_then(|n| n.checked_add(payload_len)) != Some(words.len()) {
            return corrupt("length");
        }
        let (stored_key, payload) = words[HEADER..].split_at(key_len);
        let sum = words[4] as u64 | (words[5] as u64) << 32;
        if sum != checksum(stored_key, payload) {
            return corrupt("checksum");
        }
        if stored_key != key {
            return Ok(None);
        }
        // Least recently used: a hit is (about) as young as a new entry.
        let now = SystemTime::now();
        let modified = file.metadata().and_then(|m| m.modified());
        if modified.is_ok_and(|t| now.duration_since(t).is_ok_and(|age| age > TOUCH_AFTER)) {
            let _ = file.set_modified(now);
        }
        Ok(Some(payload.to_vec()))
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
