//! Stage 1, probe: a user account by name, through the C library's name service (so LDAP and
//! other NSS sources answer too, not only /etc/passwd).

pub use crate::model::machine::process::UserIds;

/// The user called `name`, or `None` when the system has no such user.
pub fn lookup(name: &str) -> Option<UserIds> {
    let cname = std::ffi::CString::new(name).ok()?;
    let mut buf = vec![0 as libc::c_char; 16384];
    // SAFETY: passwd is plain data; all-zero is a valid value to be filled in.
    let mut pw: libc::passwd = unsafe { std::mem::zeroed() };
    let mut out: *mut libc::passwd = std::ptr::null_mut();
    // SAFETY: every pointer is valid for the call and `buf` is as long as said; on success
    // `out` points at `pw`, whose strings point into `buf` (not used after it is dropped).
    let r = unsafe {
        libc::getpwnam_r(
            cname.as_ptr(),
            &mut pw,
            buf.as_mut_ptr(),
            buf.len(),
            &mut out,
        )
    };
    (r == 0 && !out.is_null()).then_some(UserIds {
        uid: pw.pw_uid,
        gid: pw.pw_gid,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn root_is_uid_0_and_nonsense_is_nobody() {
        assert_eq!(lookup("root"), Some(UserIds { uid: 0, gid: 0 }));
        assert_eq!(lookup("no-such-user-hugelab"), None);
        assert_eq!(lookup("nul\0byte"), None);
    }
}
