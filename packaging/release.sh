#!/bin/sh
# packaging/release.sh [OUTDIR]: the portable release tarball,
# OUTDIR/profd-VERSION-x86_64.tar.gz (default OUTDIR: build-release/dist).
#
# A Release build in build-release/, then profd-VERSION/ with
#   bin/profd, bin/profctl       launchers (sh): the bundled loader runs
#                                lib/profd or lib/profctl with lib/ as its
#                                only library path
#   lib/                         the stripped executables and every shared
#                                library ldd lists for them, glibc and its
#                                loader ld-linux-x86-64.so.2 included
#   share/man/man{8,1}/          profd.8, profctl.1
#   etc/profd.conf               the configuration file, every line commented
#   lib/systemd/system/profd.service   ExecStart=/opt/profd/bin/profd
#   README                       install commands and what the bundle needs
# so nothing of the host's userland is used: not its glibc, libbpf, libelf,
# libcurl or OpenSSL.  Only the kernel (5.10+ with BTF) is the host's.
set -eu

cd "$(dirname "$0")/.."
src=$(pwd)
build="$src/build-release"
outdir=${1:-"$build/dist"}
mkdir -p "$outdir"
outdir=$(cd "$outdir" && pwd)

version=$(sed -n 's/^project(profd VERSION \([0-9][0-9.]*\).*/\1/p' CMakeLists.txt)
[ -n "$version" ] || { echo "release: no project version in CMakeLists.txt" >&2; exit 1; }
[ "$(uname -m)" = x86_64 ] || { echo "release: builds x86_64 bundles only" >&2; exit 1; }
name="profd-$version"
jobs=${PROFD_RELEASE_JOBS:-2}

# CMake's Release flags (-O3 -DNDEBUG, no debug information): stripping
# then removes only the symbol table, so no separate debug file is kept.
cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
cmake --build "$build" -j"$jobs" --target profd profctl

stage="$build/stage"
rm -rf "$stage"
root="$stage/$name"
mkdir -p "$root/bin" "$root/lib/systemd/system" "$root/share/man/man8" \
	"$root/share/man/man1" "$root/etc"

# Every library the dynamic loader resolves for either program, copied
# under the name the programs ask for (the soname), and the loader itself.
for exe in profd profctl; do
	if ldd "$build/$exe" | grep -q 'not found'; then
		ldd "$build/$exe" >&2
		echo "release: $exe has a library ldd cannot find" >&2
		exit 1
	fi
done
# And elfutils' debuginfod client with its libraries: profd loads it at
# run time where DEBUGINFOD_URLS is set (README, Running in production),
# and the bundled loader looks nowhere but lib/.
debuginfod=$(ldconfig -p | awk '$1 == "libdebuginfod.so.1" && /x86-64/ { print $NF; exit }')
[ -n "$debuginfod" ] || echo "release: no libdebuginfod.so.1 here: the bundle fetches no debug files" >&2
libs=$(for exe in "$build/profd" "$build/profctl" $debuginfod; do
	ldd "$exe" | awk '
		$2 == "=>" && $3 ~ /^\// { print $1 " " $3; next }
		$1 ~ /^\// && $1 ~ /ld-linux/ { print "ld-linux-x86-64.so.2 " $1 }'
done | sort -u)
[ -z "$debuginfod" ] || libs=$(printf '%s\nlibdebuginfod.so.1 %s' "$libs" "$debuginfod")
[ -n "$libs" ] || { echo "release: ldd listed no libraries" >&2; exit 1; }
echo "$libs" | while read -r soname path; do
	cp -L "$path" "$root/lib/$soname"
	chmod 0755 "$root/lib/$soname"
done
[ -f "$root/lib/ld-linux-x86-64.so.2" ] && [ -f "$root/lib/libc.so.6" ] || {
	echo "release: ldd did not list glibc's loader and libc.so.6" >&2
	exit 1
}

for exe in profd profctl; do
	strip --strip-all -o "$root/lib/$exe" "$build/$exe"
	cat >"$root/bin/$exe" <<EOF
#!/bin/sh
# $exe from the profd release bundle: the bundled dynamic loader runs
# lib/$exe with the bundled libraries only (--library-path is not passed on
# to programs $exe starts, unlike LD_LIBRARY_PATH).
self=\$(readlink -f "\$0" 2>/dev/null) || self=\$0
dir=\$(dirname "\$self")
exec "\$dir/../lib/ld-linux-x86-64.so.2" --library-path "\$dir/../lib" --argv0 "\$0" "\$dir/../lib/$exe" "\$@"
EOF
	chmod 0755 "$root/bin/$exe"
done

install -m 0644 packaging/profd.8 "$root/share/man/man8/profd.8"
install -m 0644 packaging/profctl.1 "$root/share/man/man1/profctl.1"
install -m 0644 packaging/profd.conf "$root/etc/profd.conf"
sed 's|^ExecStart=/usr/sbin/profd|ExecStart=/opt/profd/bin/profd|' packaging/profd.service \
	>"$root/lib/systemd/system/profd.service"
grep -q '^ExecStart=/opt/profd/bin/profd ' "$root/lib/systemd/system/profd.service" || {
	echo "release: profd.service has no ExecStart=/usr/sbin/profd to rewrite" >&2
	exit 1
}

cat >"$root/README" <<EOF
profd $version, x86-64 Linux: a system-wide eBPF sampling profiler

Run it from where it is unpacked, as root:

    tar xzf $name-x86_64.tar.gz
    sudo $name/bin/profd --all-processes

and ask it for profiles from another shell (profctl --help):

    sudo $name/bin/profctl list
    sudo $name/bin/profctl dump --pid 1234 --format svg -o out.svg

Needs: a Linux kernel 5.10 or later with BTF (/sys/kernel/btf/vmlinux),
root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE ...: profd(8)) and /bin/sh.
Nothing of the host's userland: bin/profd and bin/profctl are launchers
that run lib/profd and lib/profctl with the bundled dynamic loader
(lib/ld-linux-x86-64.so.2) and the bundled libraries in lib/ (glibc 2.36,
libbpf, libelf, libdw, SQLite, libcurl, OpenSSL, elfutils' debuginfod
client and theirs), so it runs
on any x86-64 distribution and in a bare container.  The BPF programs are
built into the executables.  Programs profctl starts
("profctl record -- CMD") run with the host's own loader and libraries.
Where there is no /bin/sh (a distroless image), run what the launcher
runs:  lib/ld-linux-x86-64.so.2 --library-path lib lib/profd --all-processes

From the host, at run time, only files:
  - /etc/passwd, /etc/group (user and group names: glibc reads them
    itself; a module nsswitch.conf names, such as sss or systemd, is
    loaded from the host if it works with glibc 2.36, else skipped);
  - CA certificates for --push to an https URL, at the Debian path
    /etc/ssl/certs/ca-certificates.crt, with /etc/ssl/certs as the
    directory (Debian, Ubuntu).  RHEL, Amazon Linux and Fedora keep the
    bundle at /etc/pki/tls/certs/ca-bundle.crt: there link it,
    ln -s /etc/pki/tls/certs/ca-bundle.crt /etc/ssl/certs/ca-certificates.crt
    or push over http.
  - man pages: man share/man/man8/profd.8

As a service: unpack to /opt/profd, create the group profd (members may
use the socket), copy the configuration and the unit, start it:

    sudo mkdir -p /opt/profd /etc/profd
    sudo tar xzf $name-x86_64.tar.gz -C /opt/profd --strip-components=1
    sudo groupadd --system profd
    sudo cp /opt/profd/etc/profd.conf /etc/profd/profd.conf
    sudo cp /opt/profd/lib/systemd/system/profd.service /etc/systemd/system/
    sudo systemctl daemon-reload && sudo systemctl enable --now profd
    sudo /opt/profd/bin/profctl stats

The unit's ExecStart is /opt/profd/bin/profd --all-processes; unpacked
elsewhere, edit that line.
EOF

# The same bytes from the same build: fixed owner, order and times.
mtime=$(git log -1 --format=%ct 2>/dev/null || echo 0)
tarball="$outdir/$name-x86_64.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
	--mtime="@$mtime" -cf - "$name" | gzip -9n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "release: $tarball ($(du -k "$tarball" | cut -f1) KiB, $(ls "$root/lib" | wc -l) files in lib/)"
