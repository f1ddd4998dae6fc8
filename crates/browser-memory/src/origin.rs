//! Origins (`scheme://host[:port]`) and site keys (the host with unsafe characters replaced),
//! and the one rule that keeps every file name inside the memory root.

/// The origin of `url` as a browser computes it for `http`, `https`, `ws` and `wss` urls:
/// lowercase scheme and host, default port dropped. Other or unparsable urls have none.
///
/// ```
/// use agent_memory_browser::origin_of;
///
/// assert_eq!(origin_of("https://Shop.Example.com:8443/cart?x=1").as_deref(), Some("https://shop.example.com:8443"));
/// assert_eq!(origin_of("https://example.com:443/").as_deref(), Some("https://example.com"));
/// assert_eq!(origin_of("not a url"), None);
/// ```
pub fn origin_of(url: &str) -> Option<String> {
    let (scheme, host, port) = parse_authority(url)?;
    Some(match port {
        Some(port) => format!("{scheme}://{host}:{port}"),
        None => format!("{scheme}://{host}"),
    })
}

/// `(scheme, host, port)` of a special url, the default port removed.
fn parse_authority(url: &str) -> Option<(String, String, Option<u16>)> {
    let url = url.trim();
    let (scheme, rest) = url.split_once("://")?;
    let scheme = scheme.to_ascii_lowercase();
    let default_port = match scheme.as_str() {
        "http" | "ws" => 80,
        "https" | "wss" => 443,
        _ => return None,
    };
    let authority = rest.split(['/', '?', '#', '\\']).next().unwrap_or_default();
    let host_port = authority.rsplit_once('@').map_or(authority, |(_, h)| h);
    let (host, port) = match host_port.rsplit_once(':') {
        Some((host, port)) if !host.ends_with(']') || host.starts_with('[') => {
            if port.is_empty() {
                (host, None)
            } else {
                (host, Some(port.parse::<u16>().ok()?))
            }
        }
        _ => (host_port, None),
    };
    let host = host.to_lowercase();
    let valid = !host.is_empty()
        && host
            .chars()
            .all(|c| c.is_alphanumeric() || matches!(c, '.' | '-' | '_' | '[' | ']' | ':'));
    if !valid {
        return None;
    }
    Some((scheme, host, port.filter(|&p| p != default_port)))
}

/// The site key of a url: its host (with a non-default port) with every character outside
/// `a-zA-Z0-9.-` replaced by `_` (`https://localhost:5173/x` -> `localhost_5173`), as the
/// memory directory names its domain folders.
///
/// An unparsable url is sanitized whole (cut to 50 characters), like the reference, with one
/// fix: a key made only of dots (`.`, `..`) has its dots replaced, so a key can never name
/// the current or parent directory.
pub fn site_key(url: &str) -> String {
    let raw = match parse_authority(url) {
        Some((_, host, Some(port))) => format!("{host}:{port}"),
        Some((_, host, None)) => host,
        None => url.chars().take(50).collect(),
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
            ("file:///tmp/x", None, "file____tmp_x"),
        ];
        for (url, origin, site) in table {
            assert_eq!(origin_of(url).as_deref(), origin, "origin of {url:?}");
            assert_eq!(site_key(url), site, "site of {url:?}");
        }
    }
}
