//! Origins (`scheme://host[:port]`) and site keys (the host with unsafe characters replaced),
//! both from the WHATWG URL standard as browsers and the reference's `new URL(...)` parse
//! urls (the `url` crate), and the one rule that keeps every file name inside the memory
//! root.

use url::{Origin, Url};

/// The origin of `url` as a browser computes it (`new URL(url).origin`): lowercase scheme
/// and host, internationalized hosts in punycode, default port dropped. Urls whose origin is
/// opaque (`file:`, `data:`, custom schemes; the reference's `"null"`) and unparsable urls
/// have none.
///
/// ```
/// use agent_memory_browser::origin_of;
///
/// assert_eq!(origin_of("https://Shop.Example.com:8443/cart?x=1").as_deref(), Some("https://shop.example.com:8443"));
/// assert_eq!(origin_of("https://example.com:443/").as_deref(), Some("https://example.com"));
/// assert_eq!(origin_of("https://bücher.example/").as_deref(), Some("https://xn--bcher-kva.example"));
/// assert_eq!(origin_of("not a url"), None);
/// ```
pub fn origin_of(url: &str) -> Option<String> {
    match Url::parse(url).ok()?.origin() {
        origin @ Origin::Tuple(..) => Some(origin.ascii_serialization()),
        Origin::Opaque(_) => None,
    }
}

/// The site key of a url, as the reference names its domain folders: the url's host (with a
/// non-default port, `new URL(url).host`) with every character outside `a-zA-Z0-9.-`
/// replaced by `_` (`https://localhost:5173/x` -> `localhost_5173`,
/// `https://bücher.example` -> `xn--bcher-kva.example`).
///
/// An unparsable url is sanitized whole, each UTF-16 code unit of a character replaced, and
/// cut to 50, as the reference does. Two fixes: an empty key (a url without a host, such as
/// `file:///x`, which the reference files directly in `domains/`) is `unknown`, and a key
/// made only of dots (`.`, `..`) has its dots replaced, so a key can never name the current
/// or parent directory.
pub fn site_key(url: &str) -> String {
    let raw = match Url::parse(url) {
        Ok(parsed) => {
            let host = parsed.host_str().unwrap_or_default();
            match parsed.port() {
                Some(port) => format!("{host}:{port}"),
                None => host.to_owned(),
            }
        }
        Err(_) => {
            // The reference's regex has no `u` flag: it replaces each UTF-16 code unit.
            let units: String = url
                .chars()
                .flat_map(|c| {
                    let keep = c.is_ascii_alphanumeric() || matches!(c, '.' | '-');
                    let (c, n) = if keep { (c, 1) } else { ('_', c.len_utf16()) };
                    std::iter::repeat_n(c, n)
                })
                .take(50)
                .collect();
            units
        }
    };
    safe_file_stem(&raw)
}

/// `raw` with every character outside `a-zA-Z0-9.-_` replaced by `_`, never empty and never
/// only dots: a name that is always one plain component inside its directory.
pub fn safe_file_stem(raw: &str) -> String {
    let mut stem: String = raw
        .chars()
        .map(|c| {
            if c.is_ascii_alphanumeric() || matches!(c, '.' | '-') {
                c
            } else {
                '_'
            }
        })
        .collect();
    if stem.is_empty() {
        stem = "unknown".to_owned();
    }
    if stem.chars().all(|c| c == '.') {
        stem = stem.replace('.', "_");
    }
    stem
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_and_site_keys() {
        // Expected values are `new URL(url).origin` and the reference's `sanitizeDomain` in
        // Node 18, with our two fixes (`unknown`, no dot-only key).
        let table = [
            (
                "https://shop.example.com:8443/search?q=x",
                Some("https://shop.example.com:8443"),
                "shop.example.com_8443",
            ),
            (
                "HTTP://LOCALHOST:80/a",
                Some("http://localhost"),
                "localhost",
            ),
            (
                "http://user:pw@host.test:5173",
                Some("http://host.test:5173"),
                "host.test_5173",
            ),
            ("..", None, "__"),
            ("/etc/passwd", None, "_etc_passwd"),
            ("", None, "unknown"),
            ("file:///tmp/x", None, "unknown"),
            // The hand-written parser refused these hosts or kept them in Unicode.
            (
                "https://bücher.example/x",
                Some("https://xn--bcher-kva.example"),
                "xn--bcher-kva.example",
            ),
            (
                "https://ÉCOLE.example:443",
                Some("https://xn--cole-9oa.example"),
                "xn--cole-9oa.example",
            ),
            (
                "http://[::1]:8080/",
                Some("http://[::1]:8080"),
                "___1__8080",
            ),
            ("https://x.test\\path", Some("https://x.test"), "x.test"),
            (
                "ftp://files.test:21/a",
                Some("ftp://files.test"),
                "files.test",
            ),
            (" https://a.test/ ", Some("https://a.test"), "a.test"),
            ("http://a.test:99999/", None, "http___a.test_99999_"),
            ("not a url 😀", None, "not_a_url___"),
        ];
        for (url, origin, site) in table {
            assert_eq!(origin_of(url).as_deref(), origin, "origin of {url:?}");
            assert_eq!(site_key(url), site, "site of {url:?}");
        }
    }
}
