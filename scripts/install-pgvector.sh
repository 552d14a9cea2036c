#!/usr/bin/env bash
# Make sure the pgvector extension (`vector`) is available in the local PostgreSQL server.
#
# Debian bookworm has no pgvector package, so when the extension is missing this script builds it
# from Debian trixie's *source* package:
#   - a private apt configuration (its own sources list with a single trixie deb-src line and its own
#     package-list directory, both in a temporary folder) is used only for `apt-get source pgvector`;
#     the system's sources, lists and pinning are not touched;
#   - postgresql-server-dev-<major> (matching the running server) and the build tools come from the
#     system's normal bookworm sources;
#   - `make && make install`, then a check that the server can create and use the extension.
#
# Idempotent: if `SELECT 1 FROM pg_available_extensions WHERE name='vector'` answers, it does nothing.
# Needs root (apt-get, make install). Takes about 15-20 s when it has to build.
#
# Connection: the usual libpq variables, defaulting to PGHOST=127.0.0.1 PGPORT=5432 PGUSER=postgres
# PGDATABASE=test (trust auth).
set -euo pipefail

export PGHOST="${PGHOST:-127.0.0.1}"
export PGPORT="${PGPORT:-5432}"
export PGUSER="${PGUSER:-postgres}"
export PGDATABASE="${PGDATABASE:-test}"
export DEBIAN_FRONTEND=noninteractive

log() { printf '[install-pgvector] %s\n' "$*" >&2; }
die() { printf '[install-pgvector] ERROR: %s\n' "$*" >&2; exit 1; }

command -v psql >/dev/null || die "psql not found: install postgresql-client (apt-get install postgresql-client-15)"

q() { psql -X -v ON_ERROR_STOP=1 -qAt -c "$1"; }

if ! q "SELECT 1" >/dev/null 2>&1; then
    die "PostgreSQL does not answer at ${PGHOST}:${PGPORT} as ${PGUSER} (database ${PGDATABASE}); start the server first"
fi

available() { [ "$(q "SELECT 1 FROM pg_available_extensions WHERE name='vector'")" = "1" ]; }

if available; then
    log "the vector extension is already available ($(q "SELECT default_version FROM pg_available_extensions WHERE name='vector'")); nothing to do"
    exit 0
fi

[ "$(id -u)" = "0" ] || die "the vector extension is missing and building it needs root (apt-get, make install)"

PG_MAJOR="$(q "SELECT current_setting('server_version_num')::int / 10000")"
PG_CONFIG="/usr/lib/postgresql/${PG_MAJOR}/bin/pg_config"
log "building pgvector for PostgreSQL ${PG_MAJOR} from Debian trixie's source package"
start=$(date +%s)

work="$(mktemp -d /tmp/pgvector-build.XXXXXX)"
trap 'rm -rf "$work"' EXIT

# 1. build dependencies, from the system's normal sources
need=()
for pkg in "postgresql-server-dev-${PG_MAJOR}" build-essential dpkg-dev; do
    dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "install ok installed" || need+=("$pkg")
done
if [ "${#need[@]}" -gt 0 ]; then
    log "installing ${need[*]}"
    if ! apt-get install -y -qq --no-install-recommends "${need[@]}" >"$work/apt-install.log" 2>&1; then
        log "apt-get install failed; refreshing the package lists and retrying"
        apt-get update -qq >"$work/apt-update.log" 2>&1 || { cat "$work/apt-update.log" >&2; die "apt-get update failed"; }
        apt-get install -y -qq --no-install-recommends "${need[@]}" >"$work/apt-install.log" 2>&1 \
            || { tail -n 30 "$work/apt-install.log" >&2; die "could not install ${need[*]}"; }
    fi
fi
[ -x "$PG_CONFIG" ] || die "$PG_CONFIG not found after installing postgresql-server-dev-${PG_MAJOR}"

# 2. the source package, through a private apt configuration (trixie deb-src only)
mkdir -p "$work/lists/partial" "$work/parts" "$work/src"
echo "deb-src [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian trixie main" \
    >"$work/trixie-src.list"
apt_private=(
    -o "Dir::Etc::SourceList=$work/trixie-src.list"
    -o "Dir::Etc::SourceParts=$work/parts"
    -o "Dir::State::Lists=$work/lists"
    -o "APT::Get::List-Cleanup=false"
)
log "fetching the trixie source index (private apt lists in $work)"
apt-get "${apt_private[@]}" update -qq >"$work/apt-src-update.log" 2>&1 \
    || { cat "$work/apt-src-update.log" >&2; die "could not read Debian trixie's source index"; }
(cd "$work/src" && apt-get "${apt_private[@]}" source -qq pgvector >"$work/apt-source.log" 2>&1) \
    || { cat "$work/apt-source.log" >&2; die "apt-get source pgvector failed"; }
srcdir="$(find "$work/src" -mindepth 1 -maxdepth 1 -type d -name 'pgvector-*' | head -n 1)"
[ -n "$srcdir" ] || die "no pgvector source directory after apt-get source"
log "building $(basename "$srcdir")"

# 3. build and install. OPTFLAGS="" gives a portable build (no -march=native), as Debian's own package does.
make -C "$srcdir" -j"$(nproc)" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" >"$work/make.log" 2>&1 \
    || { tail -n 40 "$work/make.log" >&2; die "building pgvector failed"; }
make -C "$srcdir" PG_CONFIG="$PG_CONFIG" OPTFLAGS="" install >"$work/make-install.log" 2>&1 \
    || { tail -n 40 "$work/make-install.log" >&2; die "make install failed"; }

# 4. verify: listed, and usable (created and used in a transaction that is rolled back)
available || die "pgvector was installed but the server does not list the vector extension"
psql -X -v ON_ERROR_STOP=1 -qAt >/dev/null <<'SQL' || die "the vector extension is listed but does not work"
BEGIN;
CREATE EXTENSION IF NOT EXISTS vector;
SELECT '[1,2,3]'::vector <=> '[1,2,4]'::vector;
ROLLBACK;
SQL
log "pgvector $(q "SELECT default_version FROM pg_available_extensions WHERE name='vector'") installed in $(( $(date +%s) - start )) s"
