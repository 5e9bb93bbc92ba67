#pragma once
// The one registry of Weft's configuration knobs. Every knob is declared here, once:
//   X(Id, "ENV_NAME", Kind, "default", "one-line meaning")
// Knobs NCCL has keep NCCL's name and meaning; knobs NCCL lacks are named WEFT_*.
// Kind is Int (decimal, or with a K/M/G suffix), String, or Bool (0/1).

#define WEFT_KNOB_LIST(X)                                                                          \
  X(Debug, "NCCL_DEBUG", String, "", "log level: VERSION, WARN, INFO or TRACE (empty: silent)")    \
  X(DebugSubsys, "NCCL_DEBUG_SUBSYS", String, "INIT,BOOTSTRAP,ENV",                                \
    "comma list of subsystems to log (INIT, COLL, P2P, SHM, NET, GRAPH, TUNING, ENV, ALLOC, "      \
    "BOOTSTRAP, ALL); ^ excludes")                                                                 \
  X(DebugFile, "NCCL_DEBUG_FILE", String, "", "write the log to this file; %h is the host, %p the pid") \
  X(ConfFile, "NCCL_CONF_FILE", String, "", "read knobs from this file before ~/.nccl.conf and /etc/nccl.conf") \
  X(CommId, "NCCL_COMM_ID", String, "", "host:port where rank 0 hosts the bootstrap root (launch without MPI)") \
  X(CommSecret, "WEFT_COMM_SECRET", String, "",                                                    \
    "secret that bootstrap peers present when NCCL_COMM_ID is used (default: a fixed value)")      \
  X(SocketIfname, "NCCL_SOCKET_IFNAME", String, "",                                                \
    "network interfaces to use: prefix list, ^ excludes, = exact names (default: skip lo, docker*)") \
  X(SocketFamily, "NCCL_SOCKET_FAMILY", String, "", "address family to use: AF_INET or AF_INET6")  \
  X(HostId, "NCCL_HOSTID", String, "", "host identity (default: hostname and boot id)")            \
  X(ShmDisable, "NCCL_SHM_DISABLE", Bool, "0", "1: ranks of one host talk over the network, not shared memory") \
  X(ShmDir, "WEFT_SHM_DIR", String, "/dev/shm", "folder that holds shared-memory segments")       \
  X(ShmStreamSlots, "WEFT_SHM_STREAM_SLOTS", Int, "-1",                                          \
    "how shm senders write their slots (x86-64; elsewhere through the caches): 1 with "           \
    "non-temporal stores (to memory, not their cache: faster where the ranks' cores share no "     \
    "cache), 0 through the caches, -1 whichever each sender measures faster, again every second")  \
  X(NvlsEnable, "NCCL_NVLS_ENABLE", Int, "2",                                                     \
    "0: NVLS is never used; 1, 2 (default): an allreduce on GPU buffers may take NVLS where every rank has a GPU of its own on one host's NVSwitches that reports multicast (src/device/nvls_plan.h); rank 0's value is used") \
  X(NvlsNChannels, "NCCL_NVLS_NCHANNELS", Int, "16",                                               \
    "thread blocks of an NVLS allreduce (at most 32; ncclConfig_t.nvlsCTAs wins); rank 0's value is used") \
  X(P2pDisable, "NCCL_P2P_DISABLE", Bool, "0", "1: no direct GPU peer-to-peer (CUDA IPC) transport") \
  X(NetGdrLevel, "NCCL_NET_GDR_LEVEL", String, "",                                                 \
    "the worst path between a GPU and a NIC over which the NIC reads and writes the GPU's memory "  \
    "itself (GPUDirect RDMA): LOC (never), PIX, PXB, PHB, SYS (default: PXB)")                     \
  X(NetGdrC2c, "NCCL_NET_GDR_C2C", Bool, "1",                                                      \
    "1: a NIC on the CPU of a GPU's chip-to-chip link counts as that link for NCCL_NET_GDR_LEVEL")   \
  X(P2pLevel, "NCCL_P2P_LEVEL", String, "",                                                       \
    "the worst path between two GPUs that may use CUDA IPC: LOC (never), NVL, PIX, PXB, PHB, SYS " \
    "(default: any path on one host)")                                                            \
  X(IbDisable, "NCCL_IB_DISABLE", Bool, "0", "1: no InfiniBand/RoCE verbs transport")              \
  X(Net, "NCCL_NET", String, "", "network transport to use: IB or Socket (default: IB where a port is active)") \
  X(IbHca, "NCCL_IB_HCA", String, "",                                                              \
    "verbs devices and ports to use: mlx5_0:1,mlx5_1 as prefixes, ^ excludes, = exact names")      \
  X(IbGidIndex, "NCCL_IB_GID_INDEX", Int, "-1",                                                     \
    "RoCE GID table index to use (-1: the first matching NCCL_IB_ROCE_VERSION_NUM and NCCL_IB_ADDR_FAMILY)") \
  X(IbRoceVersionNum, "NCCL_IB_ROCE_VERSION_NUM", Int, "2", "RoCE version of the GID to pick (1 or 2)") \
  X(IbAddrFamily, "NCCL_IB_ADDR_FAMILY", String, "AF_INET", "address family of the RoCE GID to pick: AF_INET or AF_INET6") \
  X(IbTimeout, "NCCL_IB_TIMEOUT", Int, "20", "verbs ACK timeout: 4.096 us * 2^value per retry (1-31)") \
  X(IbRetryCnt, "NCCL_IB_RETRY_CNT", Int, "7", "verbs transport retries before a send fails (0-7)")  \
  X(IbSl, "NCCL_IB_SL", Int, "0", "InfiniBand service level of the queue pairs (0-15)")              \
  X(IbTc, "NCCL_IB_TC", Int, "0", "traffic class of the queue pairs (RoCE: DSCP << 2, 0-255)")      \
  X(IbQpsPerConnection, "NCCL_IB_QPS_PER_CONNECTION", Int, "1", "queue pairs per verbs connection, each carrying a share of every slot (1-8; the receiver's value)") \
  X(BuffSize, "NCCL_BUFFSIZE", Int, "4194304", "bytes of buffering per connection (split in slots)") \
  X(LlBuffSize, "NCCL_LL_BUFFSIZE", Int, "524288",                                                \
    "bytes of LL buffering per shm connection (split in slots; at most 2x NCCL_BUFFSIZE; 0: LL pieces take Simple slots)") \
  X(Algo, "NCCL_ALGO", String, "",                                                               \
    "algorithms allowed: ring, tree, ... as a list, ^ to exclude, or allreduce:tree;... per collective") \
  X(Proto, "NCCL_PROTO", String, "",                                                             \
    "protocols allowed: simple, ll, ll128 as a list, ^ to exclude, or allreduce:simple;... (Weft has Simple and LL)") \
  X(TuneFile, "WEFT_TUNE_FILE", String, "",                                                      \
    "the tuner's constants as weft tune --calibrate measured them (default: built-in); rank 0's file is used") \
  X(MinNChannels, "NCCL_MIN_NCHANNELS", Int, "1",                                                 \
    "fewest channels a collective on host memory uses (pat and rhd: always 1; the tree: at most 2)") \
  X(MaxNChannels, "NCCL_MAX_NCHANNELS", Int, "-1",                                                \
    "channels a communicator builds on host memory, the most a call uses (-1: as many as the tuner's constants say add bandwidth, 1 by default)") \
  X(GpuChannels, "WEFT_GPU_CHANNELS", Int, "8",                                                   \
    "channels (thread blocks per rank) of a collective on GPU buffers; rank 0's value is used")   \
  X(GpuDirect, "WEFT_GPU_DIRECT", Bool, "1",                                                      \
    "1: an allreduce on GPU buffers whose ranks are all threads of one process on one GPU (at most 8) reads every input and writes every output once (src/device/direct_plan.h); 0: the ring; rank 0's value is used") \
  X(GpuLlMaxBytes, "WEFT_GPU_LL_MAX_BYTES", Int, "65536",                                         \
    "collectives on GPU buffers of at most this many bytes (count times element size) move LL pieces, where NCCL_PROTO allows LL and every rank is on one host; rank 0's value is used") \
  X(MinCtas, "NCCL_MIN_CTAS", Int, "-1",                                                         \
    "fewest channels (CTAs) on GPU buffers, raising WEFT_GPU_CHANNELS (-1: unset; ncclConfig_t.minCTAs wins; rank 0's value is used)") \
  X(MaxCtas, "NCCL_MAX_CTAS", Int, "-1",                                                         \
    "most thread blocks (CTAs) of any launch on GPU buffers, lowering WEFT_GPU_CHANNELS; lanes beyond it are folded into fewer blocks (-1: unset; ncclConfig_t.maxCTAs wins; rank 0's value is used)") \
  X(CommBlocking, "NCCL_COMM_BLOCKING", Int, "1", "0: communicators are nonblocking by default")   \
  X(Timeout, "WEFT_TIMEOUT", Int, "0",                                                             \
    "seconds without progress before a call fails, or a GPU kernel gives up (0: wait forever); "  \
    "also how long a bootstrap root waits for the next rank (0: one hour)")                       \
  X(Check, "WEFT_CHECK", Bool, "0",                                                                \
    "1: before each launch the ranks compare their calls (collective, count, type, op, root) and "  \
    "report a mismatch as ncclInvalidUsage; costs one small allgather per launch")                \
  X(CheckPointers, "NCCL_CHECK_POINTERS", Bool, "0",                                              \
    "1: a call's device memory must be memory of the communicator's GPU (ncclInvalidArgument)")   \
  X(DumpSignal, "WEFT_DUMP_SIGNAL", String, "",                                                    \
    "signal (USR1, USR2 or a number) on which every rank prints what its communicators wait for")  \
  X(SocketConnectTimeout, "WEFT_SOCKET_CONNECT_TIMEOUT", Int, "60",                                 \
    "seconds to keep retrying a TCP connect to a peer or the bootstrap root; a rank connected to "  \
    "the root waits this long plus WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT for its welcome")              \
  X(BootstrapHandshakeTimeout, "WEFT_BOOTSTRAP_HANDSHAKE_TIMEOUT", Int, "5",                       \
    "seconds an incoming bootstrap or socket-transport connection has to present its handshake")                          \
  X(CmaMinBytes, "WEFT_CMA_MIN_BYTES", Int, "0",                                                  \
    "allreduces on host memory of at least this many bytes read and write the peers' buffers "     \
    "directly (process_vm_readv/writev) where the kernel allows; 0 (default): never; rank 0's value is used") \
  X(WindowMinBytes, "WEFT_WINDOW_MIN_BYTES", Int, "65536",                                        \
    "allreduces, allgathers, reducescatters and broadcasts on host memory whose buffers lie in "    \
    "memory windows that every rank reaches (ncclCommWindowRegister) and whose larger buffer "       \
    "holds at least this many bytes read and write the peers' buffers in place; 0: never; rank "   \
    "0's value is used")                                                                          \
  X(StreamMinBytes, "WEFT_STREAM_MIN_BYTES", Int, "8388608",                                      \
    "host-memory operations of at least this many bytes (count times element size) write the "     \
    "user's buffers with non-temporal stores, which bypass the caches; 0: never")                   \
  X(SocketTimeout, "WEFT_SOCKET_TIMEOUT", Int, "20",                                             \
    "seconds without acknowledgement (of sent data or keepalive probes) before a TCP connection "  \
    "fails: the peer's host is unreachable; the kernel answers for a live peer however busy; 0: "  \
    "the kernel's default (about 15 minutes)")                                                    \
  X(SpinCount, "WEFT_SPIN_COUNT", Int, "1000",                                                  \
    "idle polls before a waiting rank yields the CPU (and at most 50 us of them); 2 where a "     \
    "communicator has more ranks on the machine than it has CPUs")                                \
  X(TopoFile, "NCCL_TOPO_FILE", String, "",                                                      \
    "NCCL topology XML or hwloc XML file that describes the machine instead of detecting it, "  \
    "for the rings of ranks on GPUs, weft topo and NCCL_TOPO_DUMP_FILE")                             \
  X(HwlocXml, "WEFT_HWLOC_XML", String, "",                                                      \
    "hwloc XML file (as lstopo writes it) that describes the machine where NCCL_TOPO_FILE is unset") \
  X(TopoDumpFile, "NCCL_TOPO_DUMP_FILE", String, "",                                             \
    "at init, write the machine as this rank sees it (NCCL_TOPO_FILE, WEFT_HWLOC_XML, or detected) as NCCL topology XML") \
  X(TopoDumpFileRank, "NCCL_TOPO_DUMP_FILE_RANK", Int, "0", "the rank that writes NCCL_TOPO_DUMP_FILE")
