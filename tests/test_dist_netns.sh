#!/bin/sh
# test_dist_netns.sh MPIEXEC TEST_DIST HELIX_LM SCRATCH: two "machines"
# simulated on this one: two network namespaces joined by a veth pair
# (10.9.<n>.1 and .2), one rank in each. mpirun runs in the first; its rsh
# launcher is a script that starts OpenMPI's daemon in the namespace named by
# the host (ip netns exec) instead of over ssh, so the ranks find each other
# and talk over the veth link only (btl tcp,self restricted to its subnet),
# as they would between hosts. Checks: test_dist passes across the link;
# helix_lm on the two namespaces gives the losses of 2 ranks on loopback
# (shared memory), bit for bit; the bytes that crossed the link are at least
# the gradients'. Needs root and network namespaces: exit 77 (skipped)
# without them.
set -u
MPIEXEC=${1:?usage: test_dist_netns.sh MPIEXEC TEST_DIST HELIX_LM SCRATCH}
TD=${2:?} BIN=${3:?} DIR=${4:?}
fail() {
    echo "FAIL: $*" >&2
    exit 1
}
command -v ip > /dev/null || { echo "no ip (iproute2): skipped"; exit 77; }
command -v unshare > /dev/null || { echo "no unshare (util-linux): skipped"; exit 77; }
"$MPIEXEC" --version 2>&1 | grep -qE "Open MPI|OpenRTE" || { echo "not OpenMPI (its --mca flags): skipped"; exit 77; }
rm -rf "$DIR" && mkdir -p "$DIR" || fail "cannot make $DIR"
id=$$
a=gadA$id b=gadB$id net=$((id % 200 + 20))
cleanup() {
    ip netns del "$a" 2> /dev/null
    ip netns del "$b" 2> /dev/null
}
trap cleanup EXIT
if ! ip netns add "$a" 2> /dev/null; then
    echo "cannot make network namespaces here (not root, or no CAP_SYS_ADMIN): skipped"
    exit 77
fi
ip netns add "$b" &&
    ip link add "va$id" type veth peer name "vb$id" &&
    ip link set "va$id" netns "$a" && ip link set "vb$id" netns "$b" &&
    ip -n "$a" addr add "10.9.$net.1/24" dev "va$id" &&
    ip -n "$b" addr add "10.9.$net.2/24" dev "vb$id" &&
    ip -n "$a" link set "va$id" up && ip -n "$b" link set "vb$id" up &&
    ip -n "$a" link set lo up && ip -n "$b" link set lo up ||
    fail "cannot set up the namespaces and their veth link"
# the launcher: "host" A or B is namespace gadA<id> or gadB<id>
# and a hostname of its own (a UTS namespace): OpenMPI names its session
# directories after the hostname, and two daemons making theirs under one
# name at once raced ("mkdir ... File exists", 1 launch in 5 under load)
cat > "$DIR/nsrsh" << AGENT
#!/bin/sh
host=\$1
shift
exec ip netns exec "gad\${host}$id" unshare --uts sh -c \
    'echo "\$0" > /proc/sys/kernel/hostname && exec sh -c "\$1"' "gad\${host}$id" "\$*"
AGENT
chmod +x "$DIR/nsrsh"
printf 'A slots=1\nB slots=1\n' > "$DIR/hosts"
# The two "hosts" share one /tmp, which OpenMPI's daemons do not expect:
# each launch gets session directories of its own
# (orte_tmpdir_base; a daemon once found the last launch's still there,
# "mkdir ... File exists", in CI at 975ed04), and no daemon shares its hwloc
# topology through shared memory (rtc ^hwloc: orted crashed in
# hwloc_shmem_topology_write, 1 run in 8 here). Binding is not used.
ns_mpirun() {
    sess=$(mktemp -d "$DIR/ompi.XXXXXX") || fail "cannot make a session directory in $DIR"
    timeout 300 ip netns exec "$a" "$MPIEXEC" --hostfile "$DIR/hosts" -np 2 \
        --mca orte_tmpdir_base "$sess" --mca rtc ^hwloc \
        --mca plm_rsh_agent "$DIR/nsrsh" --mca btl tcp,self \
        --mca btl_tcp_if_include "10.9.$net.0/24" --mca oob_tcp_if_include "10.9.$net.0/24" \
        -x OMPI_ALLOW_RUN_AS_ROOT -x OMPI_ALLOW_RUN_AS_ROOT_CONFIRM "$@"
}
link_bytes() { ip -n "$a" -s link show "va$id" | awk '/TX:/ { getline; print $1 }'; }

# where each rank runs
ns_mpirun sh -c 'echo "rank $OMPI_COMM_WORLD_RANK: $(ip -o -4 addr show | grep 10.9 | cut -d" " -f2,7) on $(cat /proc/sys/kernel/hostname)"' \
    > "$DIR/where.log" 2>&1 || { cat "$DIR/where.log"; fail "mpirun cannot start ranks in the namespaces"; }
grep -q "rank 0: va$id 10.9.$net.1" "$DIR/where.log" && grep -q "rank 1: vb$id 10.9.$net.2" "$DIR/where.log" ||
    { cat "$DIR/where.log"; fail "the ranks are not one in each namespace"; }
cat "$DIR/where.log"

ns_mpirun "$TD" > "$DIR/test_dist.log" 2>&1 || { cat "$DIR/test_dist.log"; fail "test_dist across the link"; }
echo "test_dist across the veth link: $(tail -n 1 "$DIR/test_dist.log")"

CONF="--d 32 --layers 2 --batch 8 --seq 32 --steps 30 --warmup 10 --lr 1e-2 --min-lr 1e-3
      --eval-every 10 --ckpt-every 10 --val-windows 24 --seed 7 --threads 1 --bytes 0 --plain"
before=$(link_bytes)
# shellcheck disable=SC2086
ns_mpirun "$BIN" train $CONF --out "$DIR/ns" > "$DIR/ns.log" 2>&1 || { cat "$DIR/ns.log"; fail "helix_lm across the link"; }
after=$(link_bytes)
# shellcheck disable=SC2086
timeout 300 "$MPIEXEC" -np 2 "$BIN" train $CONF --out "$DIR/lo" > "$DIR/lo.log" 2>&1 ||
    { cat "$DIR/lo.log"; fail "helix_lm on loopback"; }
cut -d, -f1,3- "$DIR/ns/metrics.csv" > "$DIR/ns.cols"
cut -d, -f1,3- "$DIR/lo/metrics.csv" > "$DIR/lo.cols"
cmp -s "$DIR/ns.cols" "$DIR/lo.cols" || {
    diff "$DIR/ns.cols" "$DIR/lo.cols" | head
    fail "the losses across the link differ from the loopback run's"
}
sent=$((after - before))
# 31072 f32 gradients a step, 30 steps: each rank sends about half of them
# twice in a ring, at least 31072 * 4 * 30 / 2 bytes
[ "$sent" -ge $((31072 * 4 * 30 / 2)) ] || fail "only $sent bytes crossed the link"
echo "helix_lm, 2 ranks in 2 namespaces: the loopback run's losses, bit for bit; $sent bytes crossed the link"
echo "test_dist_netns: ok"
