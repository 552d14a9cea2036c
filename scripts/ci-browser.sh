#!/usr/bin/env bash
# CI set-up for the web inspector's browser tests: Debian's chromium and its chromedriver must be
# installed, then the tests are made mandatory (DEEPCONTEXT_REQUIRE_BROWSER=1: a missing browser
# FAILS them instead of skipping them).
#
#   in .ci/run:   source scripts/ci-browser.sh             (exports into the calling shell)
#        or:      eval "$(bash scripts/ci-browser.sh)"     (prints the export on stdout)
#
# Installs `chromium chromium-driver` with apt-get when either is missing (needs root; quiet), then
# checks both answer. Any failure: a clear message on stderr and a non-zero status.

_dc_ci_browser() {
    local browser=/usr/bin/chromium driver=/usr/bin/chromedriver
    if [ ! -x "$browser" ] || [ ! -x "$driver" ]; then
        echo "[ci-browser] chromium or chromedriver is missing: installing them with apt-get" >&2
        if ! command -v apt-get >/dev/null 2>&1; then
            echo "[ci-browser] FATAL: no apt-get; install chromium and chromium-driver (Debian packages)" >&2
            return 1
        fi
        local sudo="" log
        [ "$(id -u)" -ne 0 ] && sudo="sudo"
        log="$(mktemp)"
        # quiet when it works; apt's own words when it does not (a mirror down, no root, no package)
        if ! { $sudo apt-get update -qq && $sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
            chromium chromium-driver; } >"$log" 2>&1; then
            echo "[ci-browser] FATAL: apt-get could not install chromium chromium-driver:" >&2
            tail -n 20 "$log" >&2
            rm -f "$log"
            return 1
        fi
        rm -f "$log"
    fi
    if ! "$driver" --version >/dev/null 2>&1 || ! "$browser" --version >/dev/null 2>&1; then
        echo "[ci-browser] FATAL: $browser or $driver does not run" >&2
        return 1
    fi
    echo "[ci-browser] $("$browser" --version 2>/dev/null | head -1), $("$driver" --version 2>/dev/null | cut -d' ' -f1-2):" \
        "browser tests are required" >&2
    export DEEPCONTEXT_REQUIRE_BROWSER=1
}

if (return 0 2>/dev/null); then
    _dc_ci_browser || return 1
else
    set -euo pipefail
    _dc_ci_browser
    echo "export DEEPCONTEXT_REQUIRE_BROWSER=1"
fi
