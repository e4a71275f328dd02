//! QEMU guest-RAM backings for `run` arms (`qemu.backing`, `qemu.prealloc`): the command's
//! `-m SIZE` becomes an explicit memory backend (`-object memory-backend-…` +
//! `-machine memory-backend=`), so each arm starts the same VM on a different host page size.
//! Pure functions over the command line; the hugetlb pool is grown by `run` through the guard.

pub use crate::model::arm::backing::{BACKEND_ID, QemuBacking, QemuConfig};

use crate::units::Bytes;

/// QEMU's `-m` value: `4G`, `4096` (MiB), or `size=4G,slots=…,maxmem=…`.
pub fn parse_memory(v: &str) -> Result<u64, String> {
    let size = v
        .split(',')
        .find_map(|p| p.strip_prefix("size="))
        .or_else(|| v.split(',').next().filter(|p| !p.contains('=')))
        .ok_or_else(|| format!("-m {v:?}: no size (expected e.g. -m 4G)"))?;
    let size = size.trim();
    let bytes = if size.chars().all(|c| c.is_ascii_digit()) {
        // A plain number is MiB to QEMU.
        size.parse::<u64>()
            .ok()
            .and_then(|m| m.checked_mul(1 << 20))
            .ok_or_else(|| format!("-m {v:?}: size out of range"))?
    } else {
        size.parse::<Bytes>()
            .map_err(|e| format!("-m {v:?}: {e}"))?
            .0
    };
    if bytes == 0 {
        return Err(format!("-m {v:?}: guest RAM of 0 bytes"));
    }
    Ok(bytes)
}

/// Words of a QEMU command line that choose the guest-RAM backend themselves.
fn chooses_backend(word: &str) -> bool {
    word.contains("memory-backend") || word == "-mem-path" || word == "-mem-prealloc"
}

/// Where `-m SIZE` is in `words` (index of `-m`) and the guest RAM size it gives.
fn find_memory(words: &[&str]) -> Result<(usize, u64), String> {
    if !words.iter().any(|w| {
        w.rsplit('/')
            .next()
            .is_some_and(|b| b.starts_with("qemu-system"))
    }) {
        return Err(
            "qemu.backing needs a QEMU command line (a qemu-system-* program with -m SIZE)".into(),
        );
    }
    if let Some(w) = words.iter().find(|w| chooses_backend(w)) {
        return Err(format!(
            "the command already chooses its guest-RAM backend ({w}); qemu.backing rewrites `-m SIZE` into one, so remove it from the command or drop qemu.backing"
        ));
    }
    let i = words
        .iter()
        .position(|w| *w == "-m" || *w == "--m")
        .ok_or("qemu.backing needs the guest RAM size as `-m SIZE` in the QEMU command line")?;
    let v = words
        .get(i + 1)
        .ok_or("`-m` at the end of the QEMU command line: give a size, e.g. -m 4G")?;
    Ok((i, parse_memory(v.trim_matches(['\'', '"']))?))
}

/// The guest RAM size of a command (`argv`, or one shell string when `shell`).
pub fn guest_size(argv: &[String], shell: bool) -> Result<u64, String> {
    let words: Vec<&str> = if shell {
        argv.iter().flat_map(|s| s.split_whitespace()).collect()
    } else {
        argv.iter().map(String::as_str).collect()
    };
    find_memory(&words).map(|(_, s)| s)
}

/// The command with its guest RAM on `cfg`'s backend: `-object …,id=hugelab-ram` and
/// `-machine memory-backend=hugelab-ram` are inserted after `-m SIZE`. A shell string is
/// rewritten in place (only insertions, so its quoting is untouched).
pub fn rewrite(argv: &[String], shell: bool, cfg: &QemuConfig) -> Result<Vec<String>, String> {
    let size = guest_size(argv, shell)?;
    let extra = [
        "-object".to_string(),
        cfg.backend(size),
        "-machine".to_string(),
        format!("memory-backend={BACKEND_ID}"),
    ];
    if !shell {
        let words: Vec<&str> = argv.iter().map(String::as_str).collect();
        let (i, _) = find_memory(&words)?;
        let mut out = argv[..i + 2].to_vec();
        out.extend(extra);
        out.extend_from_slice(&argv[i + 2..]);
        return Ok(out);
    }
    // The first `-m VALUE` pair of the script, found by its byte offsets.
    let mut out = Vec::with_capacity(argv.len());
    let mut done = false;
    for s in argv {
        if done {
            out.push(s.clone());
            continue;
        }
        let mut words = s.split_whitespace().peekable();
        let mut end = None;
        let mut offset = 0;
        while let Some(w) = words.next() {
            let at = offset + s[offset..].find(w).expect("a word of s");
            offset = at + w.len();
            if (w == "-m" || w == "--m")
                && let Some(v) = words.peek()
            {
                end = Some(offset + s[offset..].find(v).expect("a word of s") + v.len());
                break;
            }
        }
        match end {
            Some(e) => {
                out.push(format!("{} {}{}", &s[..e], extra.join(" "), &s[e..]));
                done = true;
            }
            None => out.push(s.clone()),
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn v(s: &str) -> Vec<String> {
        s.split_whitespace().map(String::from).collect()
    }

    #[test]
    fn memory_sizes_as_qemu_reads_them() {
        assert_eq!(parse_memory("4G").unwrap(), 4 << 30);
        assert_eq!(parse_memory("512M").unwrap(), 512 << 20);
        assert_eq!(parse_memory("4096").unwrap(), 4096 << 20);
        assert_eq!(parse_memory("size=2G,slots=2,maxmem=8G").unwrap(), 2 << 30);
        assert!(parse_memory("0").unwrap_err().contains("0 bytes"));
        assert!(parse_memory("slots=2").unwrap_err().contains("no size"));
        assert!(parse_memory("4X").is_err());
    }

    #[test]
    fn rewrites_argv_per_backing() {
        let cmd = v("qemu-system-x86_64 -S -m 1G -display none");
        let c = |b, p| QemuConfig {
            backing: b,
            prealloc: p,
        };
        assert_eq!(
            rewrite(&cmd, false, &c(QemuBacking::Thp, true)).unwrap(),
            v(
                "qemu-system-x86_64 -S -m 1G -object memory-backend-ram,id=hugelab-ram,size=1G,prealloc=on -machine memory-backend=hugelab-ram -display none"
            )
        );
        assert_eq!(
            rewrite(&cmd, false, &c(QemuBacking::Hugetlb1G, false)).unwrap()[5],
            "memory-backend-memfd,id=hugelab-ram,size=1G,hugetlb=on,hugetlbsize=1G"
        );
        assert_eq!(
            rewrite(&cmd, false, &c(QemuBacking::Hugetlb2M, true)).unwrap()[5],
            "memory-backend-memfd,id=hugelab-ram,size=1G,hugetlb=on,hugetlbsize=2M,prealloc=on"
        );
        assert_eq!(
            rewrite(&cmd, false, &c(QemuBacking::FourK, false)).unwrap()[5],
            "memory-backend-ram,id=hugelab-ram,size=1G"
        );
    }

    #[test]
    fn rewrites_a_shell_string_by_insertion_only() {
        let cmd = vec![
            "echo quit | /usr/bin/qemu-system-x86_64 -S -m  512M -monitor stdio -name 'a b'".into(),
        ];
        let out = rewrite(
            &cmd,
            true,
            &QemuConfig {
                backing: QemuBacking::Hugetlb2M,
                prealloc: true,
            },
        )
        .unwrap();
        assert_eq!(
            out,
            vec![
                "echo quit | /usr/bin/qemu-system-x86_64 -S -m  512M -object memory-backend-memfd,id=hugelab-ram,size=512M,hugetlb=on,hugetlbsize=2M,prealloc=on -machine memory-backend=hugelab-ram -monitor stdio -name 'a b'"
                    .to_string()
            ]
        );
        assert_eq!(guest_size(&cmd, true).unwrap(), 512 << 20);
    }

    #[test]
    fn refuses_what_it_cannot_rewrite() {
        let c = QemuConfig {
            backing: QemuBacking::Thp,
            prealloc: false,
        };
        let e = rewrite(&v("sleep 1"), false, &c).unwrap_err();
        assert!(e.contains("qemu-system"), "{e}");
        let e = rewrite(&v("qemu-system-x86_64 -S"), false, &c).unwrap_err();
        assert!(e.contains("-m SIZE"), "{e}");
        let e = rewrite(
            &v("qemu-system-x86_64 -m 1G -mem-path /dev/hugepages"),
            false,
            &c,
        )
        .unwrap_err();
        assert!(
            e.contains("already chooses") && e.contains("-mem-path"),
            "{e}"
        );
        let e = rewrite(&v("qemu-system-x86_64 -m"), false, &c).unwrap_err();
        assert!(e.contains("give a size"), "{e}");
    }
}
