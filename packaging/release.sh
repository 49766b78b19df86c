#!/bin/sh
# packaging/release.sh [OUTDIR [ARCH...]]: the portable release tarballs,
# OUTDIR/profd-VERSION-ARCH.tar.gz (default OUTDIR: build-release/dist) for
# each ARCH of x86_64 (native) and aarch64 (cross-built with
# cmake/aarch64-linux-gnu.cmake and Debian's :arm64 libraries; default:
# both).
#
# A Release build in build-release/ (build-release-arm64/ for aarch64),
# then profd-VERSION/ with
#   bin/profd, bin/profctl       launchers (sh): the bundled loader runs
#                                lib/profd or lib/profctl with lib/ as its
#                                only library path
#   lib/                         the stripped executables and every shared
#                                library ldd lists for them, glibc and its
#                                loader (ld-linux-x86-64.so.2,
#                                ld-linux-aarch64.so.1) included
#   libexec/profd, libexec/profctl   symbolic links to that loader: the
#                                process takes the name it is run by
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
[ "$(uname -m)" = x86_64 ] || { echo "release: builds on x86_64 hosts only" >&2; exit 1; }
name="profd-$version"
jobs=${PROFD_RELEASE_JOBS:-2}
[ $# -gt 1 ] && { shift; arches=$*; } || arches="x86_64 aarch64"

# NEEDED FILE: the sonames an ELF file asks for.
needed() {
	readelf -d "$1" | sed -n 's/.*(NEEDED).*\[\(.*\)\]/\1/p'
}

# multiarch_lib SONAME: where Debian's :arm64 packages put it, else the
# cross toolchain's runtime (libstdc++6-arm64-cross: the same gcc build).
multiarch_lib() {
	for d in /lib/aarch64-linux-gnu /usr/lib/aarch64-linux-gnu /usr/aarch64-linux-gnu/lib; do
		[ -e "$d/$1" ] && { echo "$d/$1"; return 0; }
	done
	return 1
}

# cross_libs FILE...: "soname path" of every library the files need, and
# of theirs, from the arm64 multiarch directories (ldd cannot run arm64
# programs here), and the loader the programs name.
cross_libs() {
	todo=$(for f in "$@"; do needed "$f"; done)
	seen=" "
	while [ -n "$todo" ]; do
		next=
		for so in $todo; do
			case $seen in *" $so "*) continue ;; esac
			seen="$seen$so "
			path=$(multiarch_lib "$so") || { echo "release: no $so for arm64" >&2; return 1; }
			echo "$so $path"
			next="$next $(needed "$path")"
		done
		todo=$next
	done
	echo "$loader $(multiarch_lib "$loader")"
}

# native_libs FILE...: the same from ldd, for the host's architecture.
native_libs() {
	for exe in "$@"; do
		ldd "$exe" | awk -v ld="$loader" '
			$2 == "=>" && $3 ~ /^\// { print $1 " " $3; next }
			$1 ~ /^\// && $1 ~ /ld-linux/ { print ld " " $1 }'
	done
}

# bundle ARCH: build, stage and pack profd-VERSION-ARCH.tar.gz.
bundle() {
	arch=$1
	case $arch in
	x86_64)
		build="$src/build-release" loader=ld-linux-x86-64.so.2 strip=strip
		toolchain= words=x86-64 ldarch=x86-64
		;;
	aarch64)
		build="$src/build-release-arm64" loader=ld-linux-aarch64.so.1
		strip=aarch64-linux-gnu-strip words=arm64 ldarch=AArch64
		toolchain="-DCMAKE_TOOLCHAIN_FILE=$src/cmake/aarch64-linux-gnu.cmake"
		;;
	*) echo "release: no bundle for $arch (x86_64, aarch64)" >&2; exit 1 ;;
	esac
	# CMake's Release flags (-O3 -DNDEBUG, no debug information): stripping
	# then removes only the symbol table, so no separate debug file is kept.
	cmake -S . -B "$build" -DCMAKE_BUILD_TYPE=Release $toolchain >/dev/null
	cmake --build "$build" -j"$jobs" --target profd profctl
	stage_bundle
}

stage_bundle() {
stage="$build/stage"
rm -rf "$stage"
root="$stage/$name"
mkdir -p "$root/bin" "$root/lib/systemd/system" "$root/share/man/man8" \
	"$root/share/man/man1" "$root/etc"

# Every library the dynamic loader resolves for either program, copied
# under the name the programs ask for (the soname), and the loader itself.
for exe in profd profctl; do
	if [ "$arch" = x86_64 ] && ldd "$build/$exe" | grep -q 'not found'; then
		ldd "$build/$exe" >&2
		echo "release: $exe has a library ldd cannot find" >&2
		exit 1
	fi
done
# And elfutils' debuginfod client with its libraries: profd loads it at
# run time where DEBUGINFOD_URLS is set (docs/guide/production.md),
# and the bundled loader looks nowhere but lib/.
debuginfod=$(ldconfig -p | awk -v a="$ldarch" '$1 == "libdebuginfod.so.1" && index($0, a) { print $NF; exit }')
[ -n "$debuginfod" ] || echo "release: no $words libdebuginfod.so.1 here: the bundle fetches no debug files" >&2
if [ "$arch" = x86_64 ]; then
	libs=$(native_libs "$build/profd" "$build/profctl" $debuginfod | sort -u)
else
	libs=$(cross_libs "$build/profd" "$build/profctl" $debuginfod) || exit 1
	libs=$(echo "$libs" | sort -u)
fi
[ -z "$debuginfod" ] || libs=$(printf '%s\nlibdebuginfod.so.1 %s' "$libs" "$debuginfod")
[ -n "$libs" ] || { echo "release: ldd listed no libraries" >&2; exit 1; }
echo "$libs" | while read -r soname path; do
	cp -L "$path" "$root/lib/$soname"
	chmod 0755 "$root/lib/$soname"
done
[ -f "$root/lib/$loader" ] && [ -f "$root/lib/libc.so.6" ] || {
	echo "release: ldd did not list glibc's loader and libc.so.6" >&2
	exit 1
}

# libexec/$exe: the bundled loader under the program's name, so that the
# kernel names the process after it (comm: ps, top, profctl list and its
# SERVICE column say profd, not ld-linux-x86-64).
mkdir -p "$root/libexec"
for exe in profd profctl; do
	$strip --strip-all -o "$root/lib/$exe" "$build/$exe"
	ln -s "../lib/$loader" "$root/libexec/$exe"
	cat >"$root/bin/$exe" <<EOF
#!/bin/sh
# $exe from the profd release bundle: the bundled dynamic loader runs
# lib/$exe with the bundled libraries only (--library-path is not passed on
# to programs $exe starts, unlike LD_LIBRARY_PATH).
self=\$(readlink -f "\$0" 2>/dev/null) || self=\$0
dir=\$(dirname "\$self")
exec "\$dir/../libexec/$exe" --library-path "\$dir/../lib" --argv0 "\$0" "\$dir/../lib/$exe" "\$@"
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
profd $version, $words Linux: a system-wide eBPF sampling profiler

Run it from where it is unpacked, as root:

    tar xzf $name-$arch.tar.gz
    sudo $name/bin/profd --all-processes

and ask it for profiles from another shell (profctl --help):

    sudo $name/bin/profctl list
    sudo $name/bin/profctl dump --pid 1234 --format svg -o out.svg

Needs: a Linux kernel 5.10 or later with BTF (/sys/kernel/btf/vmlinux),
root (or CAP_BPF, CAP_PERFMON, CAP_SYS_PTRACE ...: profd(8)) and /bin/sh.
Nothing of the host's userland: bin/profd and bin/profctl are launchers
that run lib/profd and lib/profctl with the bundled dynamic loader
(lib/$loader) and the bundled libraries in lib/ (glibc 2.36,
libbpf, libelf, libdw, SQLite, libcurl, OpenSSL, elfutils' debuginfod
client and theirs), so it runs
on any $words distribution and in a bare container.  The BPF programs are
built into the executables.  Programs profctl starts
("profctl record -- CMD") run with the host's own loader and libraries.
Where there is no /bin/sh (a distroless image), run what the launcher
runs:  libexec/profd --library-path lib lib/profd --all-processes

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
    sudo tar xzf $name-$arch.tar.gz -C /opt/profd --strip-components=1
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
tarball="$outdir/$name-$arch.tar.gz"
tar -C "$stage" --sort=name --owner=0 --group=0 --numeric-owner \
	--mtime="@$mtime" -cf - "$name" | gzip -9n >"$tarball.tmp"
mv "$tarball.tmp" "$tarball"
echo "release: $tarball ($(du -k "$tarball" | cut -f1) KiB, $(ls "$root/lib" | wc -l) files in lib/)"
}

for a in $arches; do
	bundle "$a"
done
