#!/usr/bin/env bash
# A one-node Ceph with a RADOS Gateway on 127.0.0.1, for the S3 tests.
#
# usage: rgw.sh up DIR     start ceph-mon, ceph-osd (memstore) and radosgw
#                          with all state under DIR (a gateway an earlier
#                          run left there is stopped first; anything else
#                          there is refused), on two free ports of
#                          127.0.0.1, create the test user and bucket, and print the
#                          endpoint.  DIR then holds:
#                            endpoint     the URL, e.g. http://127.0.0.1:40123
#                            bucket       the bucket's name
#                            credentials  the keys, as ~/.aws/credentials ([default])
#        rgw.sh down DIR   kill the three daemons by their pid files and remove DIR.
#
# Every wait is bounded; a failure prints one line saying which step failed
# (and the tail of that daemon's log), stops what was started and removes
# DIR.  Needs ceph-mon, ceph-osd, radosgw (Debian 12: Ceph 16) and curl.
# The keys are fixed test keys, good only for this throw-away gateway.
set -euo pipefail

ACCESS_KEY=ZMOUNTTESTACCESSKEY0
SECRET_KEY=zmountTestSecretKeyOnlyForTheLocalRGW0000
BUCKET=zmount-test
STEP_TIMEOUT=${RGW_STEP_TIMEOUT:-60}

die() {
	echo "rgw.sh: $*" >&2
	exit 1
}

free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# ceph CLI with our config; bounded, so a mon that never answers cannot hang us.
cephc() {
	timeout "$STEP_TIMEOUT" ceph -c "$D/ceph.conf" --connect-timeout "$STEP_TIMEOUT" "$@"
}

# stop_all DIR: SIGKILL every daemon by its pid file and wait until each is
# gone.  All state is throw-away (memstore), and a clean stop costs about
# 2 s a daemon; SIGKILL costs nothing.
stop_all() {
	local f pid pids=()
	for f in "$1"/run/*.pid; do
		[ -f "$f" ] || continue
		pid=$(cat "$f" 2>/dev/null) || continue
		[[ $pid =~ ^[0-9]+$ ]] && kill -9 "$pid" 2>/dev/null && pids+=("$pid")
	done
	for pid in "${pids[@]}"; do
		for _ in $(seq 100); do
			kill -0 "$pid" 2>/dev/null || break
			sleep 0.1
		done
	done
	return 0
}

# wait_for WHAT LOG CMD...: runs CMD every 0.5 s until it succeeds, for STEP_TIMEOUT s.
wait_for() {
	local what=$1 log=$2
	shift 2
	local end=$((SECONDS + STEP_TIMEOUT))
	until "$@" >/dev/null 2>&1; do
		if [ $SECONDS -ge $end ]; then
			[ -f "$log" ] && tail -n 5 "$log" | sed 's/^/    /' >&2
			die "$what not ready after ${STEP_TIMEOUT}s (RGW_KEEP=1 keeps $log)"
		fi
		sleep 0.5
	done
}

# run_step WHAT CMD...: runs CMD, bounded; on failure shows its output.
run_step() {
	local what=$1 out
	shift
	[ "$(type -t "$1")" = function ] || set -- timeout "$STEP_TIMEOUT" "$@"
	if ! out=$("$@" 2>&1); then
		printf '%s\n' "$out" | tail -n 5 | sed 's/^/    /' >&2
		die "$what failed"
	fi
	printf '%s\n' "$out"
}

s3curl() { # s3curl ARGS...: a signed request to the gateway
	curl -sS --max-time 10 --aws-sigv4 "aws:amz:us-east-1:s3" --user "$ACCESS_KEY:$SECRET_KEY" \
		-H "x-amz-content-sha256: UNSIGNED-PAYLOAD" "$@"
}

write_conf() {
	local fsid=$1 monport=$2 rgwport=$3
	cat >"$D/ceph.conf" <<CONF
[global]
fsid = $fsid
mon host = v1:127.0.0.1:$monport
auth cluster required = none
auth service required = none
auth client required = none
osd pool default size = 1
osd pool default min size = 1
osd pool default pg num = 8
osd pool default pgp num = 8
osd crush chooseleaf type = 0
mon allow pool size one = true
mon max pg per osd = 1000
mon data avail warn = 1
mon data avail crit = 0
run dir = $D/run
pid file = $D/run/\$name.pid
log file = $D/log/\$name.log
admin socket = $D/run/\$name.asok
mon data = $D/mon/\$name
osd data = $D/osd/\$name
osd objectstore = memstore
memstore device bytes = 2147483648
# At start an OSD may send its crush update before it has the monmap, and the
# mon refuses it ("wrong fsid"; Ceph 16): we place osd.0 in the crush map.
osd crush update on start = false
osd class update on start = false
keyring = $D/keyring
[client.rgw]
# tcp_nodelay: without it every answer on a reused connection waits ~40 ms
# (Nagle against the client's delayed ACK), which S3 itself does not do.
rgw frontends = beast endpoint=127.0.0.1:$rgwport tcp_nodelay=1
rgw data = $D/rgw
CONF
}

up() {
	if [ -f "$D/ceph.conf" ]; then
		echo "rgw.sh: stopping the gateway a previous run left in $D" >&2
		down
	fi
	[ -e "$D" ] && die "$D exists and is not an rgw.sh directory"
	for t in ceph-mon ceph-osd radosgw radosgw-admin monmaptool ceph curl python3; do
		command -v $t >/dev/null ||
			die "missing $t (apt-get install -y ceph-mon ceph-osd radosgw curl python3)"
	done
	# A second try with fresh ports and state: a port taken between the
	# pick and the bind, or a daemon that loses a start-up race, is not a
	# reason to fail a test run.  Each try cleans up after itself.
	(up_once) && return 0
	[ "${RGW_KEEP:-0}" = 1 ] && exit 1
	echo "rgw.sh: retrying once" >&2
	(up_once)
}

up_once() {
	local fsid monport rgwport osd uuid
	mkdir -p "$D"/{run,log,mon,osd/osd.0,rgw}
	# RGW_KEEP=1 keeps DIR (logs) after a failure, for debugging.
	trap 'stop_all "$D"; [ "${RGW_KEEP:-0}" = 1 ] || rm -rf "$D"' EXIT
	: >"$D/keyring"
	fsid=$(cat /proc/sys/kernel/random/uuid)
	monport=$(free_port)
	rgwport=$(free_port)
	write_conf "$fsid" "$monport" "$rgwport"
	run_step "monmaptool" monmaptool --create --addv a "[v1:127.0.0.1:$monport]" --fsid "$fsid" \
		"$D/monmap" >/dev/null
	run_step "ceph-mon --mkfs" ceph-mon -c "$D/ceph.conf" --mkfs -i a --monmap "$D/monmap" >/dev/null
	run_step "ceph-mon start" ceph-mon -c "$D/ceph.conf" -i a >/dev/null
	wait_for "ceph-mon" "$D/log/mon.a.log" cephc mon stat
	uuid=$(cat /proc/sys/kernel/random/uuid)
	osd=$(run_step "ceph osd new" cephc osd new "$uuid")
	[ "$osd" = 0 ] || die "ceph osd new said '$osd', not 0"
	run_step "ceph-osd --mkfs" ceph-osd -c "$D/ceph.conf" -i 0 --mkfs --osd-uuid "$uuid" >/dev/null
	run_step "ceph-osd start" ceph-osd -c "$D/ceph.conf" -i 0 >/dev/null
	run_step "ceph osd crush add" cephc osd crush add osd.0 1.0 host=localhost root=default >/dev/null
	wait_for "ceph-osd (up)" "$D/log/osd.0.log" bash -c "ceph -c '$D/ceph.conf' --connect-timeout 5 osd dump | grep -q '^osd.0 up'"
	run_step "radosgw start" radosgw -c "$D/ceph.conf" -n client.rgw >/dev/null
	wait_for "radosgw" "$D/log/client.rgw.log" curl -sf --max-time 2 "http://127.0.0.1:$rgwport/"
	run_step "radosgw-admin user create" radosgw-admin -c "$D/ceph.conf" user create --uid=zmount \
		--display-name=zmount --access-key="$ACCESS_KEY" --secret-key="$SECRET_KEY" >/dev/null
	# The user may take a moment to be seen by the gateway: retry the bucket creation.
	wait_for "bucket creation" "$D/log/client.rgw.log" \
		s3curl -f -X PUT "http://127.0.0.1:$rgwport/$BUCKET"
	echo "http://127.0.0.1:$rgwport" >"$D/endpoint"
	echo "$BUCKET" >"$D/bucket"
	printf '[default]\naws_access_key_id = %s\naws_secret_access_key = %s\n' \
		"$ACCESS_KEY" "$SECRET_KEY" >"$D/credentials"
	trap - EXIT
	cat "$D/endpoint"
}

down() {
	[ -d "$D" ] || return 0
	[ -f "$D/ceph.conf" ] || die "$D does not look like an rgw.sh directory; not removing it"
	stop_all "$D"
	rm -rf "$D"
}

[ $# -eq 2 ] || die "usage: rgw.sh up|down DIR"
D=$(realpath -m "$2")
case $1 in
up) up ;;
down) down ;;
*) die "usage: rgw.sh up|down DIR" ;;
esac
