//! The HTTP version of a message (HTTP/1.0 or HTTP/1.1).

/// The HTTP version of a message.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Version {
    /// HTTP/1.0.
    Http10,
    /// HTTP/1.1.
    Http11,
}

impl Version {
    pub(crate) fn from_minor(minor: Option<u8>) -> Version {
        if minor == Some(0) {
            Version::Http10
        } else {
            Version::Http11
        }
    }

    /// `"HTTP/1.0"` or `"HTTP/1.1"`.
    pub fn as_str(&self) -> &'static str {
        match self {
            Version::Http10 => "HTTP/1.0",
            Version::Http11 => "HTTP/1.1",
        }
    }
}

impl core::fmt::Display for Version {
    fn fmt(&self, f: &mut core::fmt::Formatter<'_>) -> core::fmt::Result {
        f.write_str(self.as_str())
    }
}
