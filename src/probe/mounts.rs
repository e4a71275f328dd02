//! hugetlbfs mounts from /proc/mounts and their page sizes.

pub use crate::model::machine::hugetlb::HugetlbfsMount;

use crate::error::ParseError;

/// The hugetlbfs entries of /proc/mounts.
pub fn parse_hugetlbfs(text: &str) -> Result<Vec<HugetlbfsMount>, ParseError> {
    let mut out = Vec::new();
    for (i, line) in text.lines().enumerate() {
        let f: Vec<&str> = line.split_whitespace().collect();
        if f.is_empty() {
            continue;
        }
        if f.len() < 4 {
            return Err(ParseError::new(
                i + 1,
                format!("expected at least 4 fields, found {line:?}"),
            ));
        }
        if f[2] != "hugetlbfs" {
            continue;
        }
        let page_size = f[3]
            .split(',')
            .find_map(|o| o.strip_prefix("pagesize="))
            .map(|v| {
                v.parse::<crate::units::Bytes>()
                    .map(|b| b.0)
                    .map_err(|e| ParseError::new(i + 1, e.to_string()))
            })
            .transpose()?;
        out.push(HugetlbfsMount {
            mount_point: f[1].replace("\\040", " "),
            page_size,
            options: f[3].to_string(),
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn finds_hugetlbfs() {
        let m = parse_hugetlbfs("proc /proc proc rw 0 0\nnone /dev/hugepages hugetlbfs rw,relatime,pagesize=2M 0 0\nnone /mnt/h1g hugetlbfs rw,pagesize=1024M 0 0\nnone /mnt/d hugetlbfs rw 0 0\n").unwrap();
        assert_eq!(m.len(), 3);
        assert_eq!(m[0].page_size, Some(2 << 20));
        assert_eq!(m[1].page_size, Some(1 << 30));
        assert_eq!(m[2].page_size, None);
    }
}
