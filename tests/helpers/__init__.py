"""What tests share and that is not a test: capture paths (:mod:`.captures`), crafted traffic
(:mod:`.packets`), hand-built exchanges (:mod:`.exchanges`), patched copies of captures
(:mod:`.capture_patch`), RFC 8448's TLS 1.3 trace (:mod:`.rfc8448`) and the project's generator
scripts loaded as modules (:mod:`.tools`), the SASL captures' secrets and the grep for them
(:mod:`.secrets`)."""
