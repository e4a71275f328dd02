use super::*;

#[test]
fn names_roundtrip() {
    for n in [
        "4k",
        "thp",
        "thp-collapse",
        "hugetlb-2m",
        "hugetlb-1g",
        "mthp-64k",
        "mthp-16k",
        "tmpfs-4k",
        "tmpfs-huge",
        "tmpfs-within",
        "tmpfs-advise",
        "pagecache",
    ] {
        let b: Backing = n.parse().unwrap();
        assert_eq!(b.to_string(), n);
    }
    assert!(
        "hugetlb-4m"
            .parse::<Backing>()
            .unwrap_err()
            .contains("2m or 1g")
    );
    assert!("mthp-3k".parse::<Backing>().is_err());
    assert!(
        "huge"
            .parse::<Backing>()
            .unwrap_err()
            .contains("valid backings")
    );
}

#[test]
fn regions_are_2m_aligned_and_rounded() {
    let r = Region::map(3 << 20, Backing::Thp).unwrap();
    assert_eq!(r.start() % TWO_MIB, 0);
    assert_eq!(r.mapped_len(), 4 << 20);
    assert_eq!(r.len(), 3 << 20);
    let r = Region::map(5000, Backing::Base).unwrap();
    assert_eq!((r.mapped_len(), r.len()), (8192, 5056));
}

#[test]
fn populate_and_free() {
    let mut r = Region::map(4 << 20, Backing::Base).unwrap();
    r.prepare().unwrap();
    r.as_mut_slice()[12345] = 7;
    assert_eq!(r.as_slice()[12345], 7);
    let _ = r.unmap_timed();
}
