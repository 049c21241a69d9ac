//! HTTP/2 framing (RFC 9113).
