#include "options.h"

#include <getopt.h>

#include <cctype>
#include <cstdio>
#include <cstdlib>
#include <cstring>

namespace braidperf {
namespace {

constexpr size_t kMaxBytes = size_t{1} << 40;

bool isNumber(const char* s) {
  if (*s == '\0') return false;
  for (; *s; s++) {
    if (!std::isdigit(static_cast<unsigned char>(*s))) return false;
  }
  return true;
}

bool parseInt(const char* text, int lo, int hi, int* out) {
  char* end = nullptr;
  long n = std::strtol(text, &end, 10);
  if (end == text || *end != '\0' || n < lo || n > hi) return false;
  *out = static_cast<int>(n);
  return true;
}

std::vector<std::string> splitCommas(const std::string& text) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t comma = text.find(',', start);
    parts.push_back(text.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    if (comma == std::string::npos) return parts;
    start = comma + 1;
  }
}

// The long options' codes, above every short option character.
enum LongCode : int { kRuns = 256, kTimeout, kHosts, kCsv, kCompare, kJson };

// Short options (a leading '+': stop at the first operand, never reorder argv, which --compare passes
// on to its children; ':': report a missing value as ':'). -t and -g take their optional count
// from the next word themselves, as getopt only knows attached optional values.
constexpr char kShortOptions[] = "+:ptgN:b:e:i:f:d:o:r:n:w:G:c:R:a:z:";
const option kLongOptions[] = {{"runs", required_argument, nullptr, kRuns},
                               {"timeout", required_argument, nullptr, kTimeout},
                               {"hosts", required_argument, nullptr, kHosts},
                               {"csv", no_argument, nullptr, kCsv},
                               {"compare", required_argument, nullptr, kCompare},
                               {"json", required_argument, nullptr, kJson},
                               {nullptr, 0, nullptr, 0}};

// The word an option must be written as: every option is a word of its own, its value the next word
// ("-b 8"; never "-b8", "-pc 1", "--runs=3" or an abbreviation such as "--ru").
std::string optionWord(int code) {
  for (const option& o : kLongOptions) {
    if (o.name != nullptr && o.val == code) return std::string("--") + o.name;
  }
  return std::string("-") + static_cast<char>(code);
}

// One command-line walk with getopt_long over the words after OP. Each handler returns false after
// printing why.
class Parser {
 public:
  Parser(int argc, char** argv, Options* out) : argc_(argc), argv_(argv), out_(out) {}

  bool run() {
    opterr = 0;  // the messages are ours
    optind = 0;  // a fresh scan (glibc), whatever an earlier parse left
    for (;;) {
      const int start = optind == 0 ? 1 : optind;
      const int code = getopt_long(argc_, argv_, kShortOptions, kLongOptions, nullptr);
      if (code == -1) return operandsAbsent(start);
      const char* word = argv_[start];
      if (code == '?' || optionWord(code == ':' ? optopt : code) != word) return unknown(word);
      if (code == ':') {
        std::fprintf(stderr, "braid-perf: %s needs a value\n", word);
        return false;
      }
      if (!one(code, word, optarg)) return false;
    }
  }

 private:
  // getopt stopped at word `start`: at the end, or at an operand or a lone "--", neither of which
  // braid-perf takes.
  bool operandsAbsent(int start) {
    if (start < argc_ && optind > start) return unknown(argv_[start]);  // "--", which getopt consumed
    if (optind < argc_) return unknown(argv_[optind]);
    return true;
  }
  bool unknown(const char* word) {
    std::fprintf(stderr, "braid-perf: unknown option '%s' (see braid-perf --help)\n", word);
    return false;
  }
  bool bad(const char* flag, const char* v, const char* expected) {
    std::fprintf(stderr, "braid-perf: bad value '%s' for %s (expected %s)\n", v, flag, expected);
    return false;
  }
  bool intFlag(const char* flag, const char* v, int lo, int hi, int* dst) {
    if (!parseInt(v, lo, hi, dst)) return bad(flag, v, "an integer in range");
    return true;
  }
  bool sizeFlag(const char* flag, const char* v, size_t* dst) {
    if (!parseSize(v, dst)) return bad(flag, v, "a size such as 8, 64K, 16M, 1G");
    return true;
  }
  // -t and -g take an optional count (nccl-tests gives one; braid-perf comm's older form does not).
  bool optionalCount(const char* flag, int* dst) {
    if (optind < argc_ && isNumber(argv_[optind])) {
      const char* v = argv_[optind++];
      if (!parseInt(v, 1, 4096, dst)) return bad(flag, v, "a count from 1");
      return true;
    }
    *dst = kAllGpus;
    return true;
  }
  bool boolFlag(const char* flag, const char* v, bool* dst) {
    int n = 0;
    if (!intFlag(flag, v, 0, 1, &n)) return false;
    *dst = n != 0;
    return true;
  }
  bool listFlag(const char* flag, const char* v, bool types) {
    bool ok = types ? parseTypeList(v, &out_->types) : parseOpList(v, &out_->ops);
    if (!ok)
      return bad(
          flag, v,
          types ? "a datatype such as float, half, bf16, fp8_e4m3, or all" : "sum prod max min avg mulsum, or all");
    return true;
  }
  bool one(int code, const char* a, const char* v);

  int argc_;
  char** argv_;
  Options* out_;
};

bool Parser::one(int code, const char* a, const char* v) {
  Options& o = *out_;
  switch (code) {
    case 'p':
      o.procFlag = true;
      return true;
    case 't':
      return optionalCount(a, &o.threadsArg);
    case 'g':
      return optionalCount(a, &o.gpusArg);
    case 'N':
      return intFlag(a, v, 1, 4096, &o.nranks);
    case 'b':
      return sizeFlag(a, v, &o.minBytes);
    case 'e':
      return sizeFlag(a, v, &o.maxBytes);
    case 'i':
      return sizeFlag(a, v, &o.stepBytes);
    case 'f':
      o.factorGiven = true;
      return intFlag(a, v, 1, 1 << 20, &o.stepFactor);
    case 'd':
      return listFlag(a, v, true);
    case 'o':
      return listFlag(a, v, false);
    case 'r':
      return intFlag(a, v, 0, 1 << 20, &o.root);
    case 'n':
      return intFlag(a, v, 1, 1000000, &o.iters);
    case 'w':
      return intFlag(a, v, 0, 1000000, &o.warmup);
    case 'G':
      return intFlag(a, v, 0, 1000000, &o.graphLaunches);
    case 'c':
      return boolFlag(a, v, &o.check);
    case 'R':
      return intFlag(a, v, 0, 2, &o.registration);
    case 'a':
      return intFlag(a, v, 0, 3, &o.average);
    case 'z': {
      int z = 0;  // nccl-tests' blocking mode: only its default (0) is offered
      if (!intFlag(a, v, 0, 1, &z)) return false;
      return z == 0 || bad(a, "1", "0 (blocking mode is not supported)");
    }
    case kRuns:
      return intFlag(a, v, 1, 1000, &o.runs);
    case kTimeout:
      return intFlag(a, v, 0, 1000000, &o.timeoutSec);
    case kHosts:
      return intFlag(a, v, 1, 4096, &o.hosts);
    case kCsv:
      o.csv = true;
      return true;
    case kCompare:
      o.compareLib = v;
      return true;
    case kJson:
      o.jsonPath = v;
      return true;
    default:
      return unknown(a);
  }
}

// Checks what only makes sense once every flag is known.
bool finish(Options* o) {
  if (o->isComm) {
    if (o->iters < 0) o->iters = 10;
    if (o->warmup < 0) o->warmup = 1;
    return true;
  }
  if (o->iters < 0) o->iters = 20;
  if (o->warmup < 0) o->warmup = 5;
  if (o->maxBytes < o->minBytes) {
    std::fprintf(stderr, "braid-perf: -e %zu is below -b %zu\n", o->maxBytes, o->minBytes);
    return false;
  }
  if (o->factorGiven && o->stepBytes != 0) {
    std::fprintf(stderr, "braid-perf: give either -f (multiplicative) or -i (additive), not both\n");
    return false;
  }
  if (!o->factorGiven && o->stepBytes == 0 && o->stepFactor < 2) o->stepFactor = 2;
  if (o->factorGiven && o->stepFactor < 2 && o->minBytes != o->maxBytes) {
    std::fprintf(stderr, "braid-perf: -f must be at least 2 (use -i for additive steps)\n");
    return false;
  }
  if (!collTraits(o->coll).hasOp) o->ops.assign(1, ncclSum);  // the op is not used; one pass per type
  return true;
}

}  // namespace

void printUsage(const char* argv0) {
  std::printf(
      "usage: %s OP [options]\n"
      "  OP              all_reduce | broadcast | reduce | all_gather | reduce_scatter | sendrecv (ring shift)\n"
      "                  | alltoall | gather | scatter: measure and check (the point-to-point ones run out of\n"
      "                  place in both columns)\n"
      "                  putsignal: the ring shift one-sided (NCCL 2.29+): ncclPutSignal from this rank's\n"
      "                  window into rank + 1's, ncclWaitSignal for rank - 1's signal; both buffers\n"
      "                  ncclMemAlloc windows (NCCL_WIN_COLL_SYMMETRIC) whatever -R says\n"
      "                  comm: communicator cost (ncclCommInitRank, the first 1 MiB AllReduce, ncclCommDestroy:\n"
      "                  time, device memory)\n"
      "ranks (ranks = processes x threads x GPUs per thread; rank r uses CUDA device r):\n"
      "  -p              one process per GPU (default when neither -t nor -g is given)\n"
      "  -t [T]          T threads in one process (no T: one thread per GPU)\n"
      "  -g [G]          G GPUs per thread, calls grouped with ncclGroupStart/End (no G: all GPUs;\n"
      "                  comm -g: one thread and ncclCommInitAll)\n"
      "  -N NRANKS       number of ranks/GPUs (default: all visible GPUs)\n"
      "sweep (collectives):\n"
      "  -b SIZE         smallest size in bytes, K/M/G suffixes (default 8)\n"
      "  -e SIZE         largest size (default 128M)\n"
      "  -f FACTOR       multiply the size by FACTOR per step (default 2)\n"
      "  -i SIZE         add SIZE per step instead\n"
      "  -d TYPE         int8 uint8 int32 uint32 int64 uint64 half float double bfloat16 fp8_e4m3\n"
      "                  fp8_e5m2 (aliases char int float16 bf16 f8e4m3 ...), a comma list, or all (float)\n"
      "  -o OP           sum prod max min avg mulsum, a comma list, or all (sum)\n"
      "  -r ROOT         root of broadcast and reduce (0)\n"
      "  -n ITERS        timed iterations per size (20; comm: cycles, 10)\n"
      "  -w WARMUP       untimed iterations before them (5; comm: 1)\n"
      "  -G LAUNCHES     capture the ITERS iterations in a CUDA graph (thread-local capture) and time\n"
      "                  LAUNCHES replays of it (0: eager launches, the default); a size the library\n"
      "                  refuses to capture (putsignal) is reported as refused\n"
      "  -c 0|1          check results, counting wrong elements (1)\n"
      "  -R 0|1|2        allocate the buffers with ncclMemAlloc and register them: 1 with ncclCommRegister\n"
      "                  (user buffer registration: zero-copy where the library has it), 2 as windows\n"
      "                  (ncclCommWindowRegister, NCCL_WIN_COLL_SYMMETRIC: symmetric kernels) (0)\n"
      "  -a 0|1|2|3      time reported over ranks: rank 0, mean, min, max (3)\n"
      "  --timeout SEC   fail when no rank reports for SEC seconds (0: wait forever)\n"
      "  --hosts H       emulate H hosts: the processes, in rank order, split into H equal groups, each\n"
      "                  with its own NCCL_HOSTID, so that traffic between groups takes the network\n"
      "                  (set NCCL_SOCKET_IFNAME=lo to keep it on this machine); hosts may share GPUs,\n"
      "                  rank r on GPU r %% GPUs, so -N 4 --hosts 4 runs on one GPU (slowly: time slices)\n"
      "compare:\n"
      "  --compare LIB   run the same benchmark in child processes against this binary's library and\n"
      "                  against LIB (another libnccl.so.2), alternating, and print medians and ratios\n"
      "  --runs R        fresh runs per library for --compare (3)\n"
      "  --csv           machine-readable output (used by --compare)\n"
      "  --json FILE     also write the results to FILE as JSON (with --compare: both libraries'\n"
      "                  medians; scripts/perf_page.py turns such files into tables and plots)\n",
      argv0);
}

bool parseOptions(int argc, char** argv, Options* out) {
  if (argc < 2 || argv[1][0] == '-') {
    printUsage(argv[0]);
    return false;
  }
  out->command.assign(argv, argv + argc);
  out->command[0] = "braid-perf";
  out->op = argv[1];
  out->isComm = out->op == "comm";
  if (!out->isComm) {
    if (!parseColl(out->op, &out->coll)) {
      std::fprintf(stderr,
                   "braid-perf: unknown operation '%s' (available: all_reduce broadcast reduce all_gather "
                   "reduce_scatter sendrecv alltoall gather scatter putsignal comm)\n",
                   out->op.c_str());
      return false;
    }
    out->op = collTraits(out->coll).name;
  }
  // The options follow OP: getopt sees OP as its argv[0].
  Parser parser(argc - 1, argv + 1, out);
  return parser.run() && finish(out);
}

bool parseSize(const std::string& text, size_t* out) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) digits++;
  if (digits == 0 || digits > 13 || text.size() > digits + 1) return false;
  size_t value = std::strtoull(text.substr(0, digits).c_str(), nullptr, 10);
  int shift = 0;
  if (text.size() == digits + 1) {
    switch (std::toupper(static_cast<unsigned char>(text[digits]))) {
      case 'K':
        shift = 10;
        break;
      case 'M':
        shift = 20;
        break;
      case 'G':
        shift = 30;
        break;
      default:
        return false;
    }
  }
  if (value > (kMaxBytes >> shift)) return false;
  *out = value << shift;
  return true;
}

bool parseTypeList(const std::string& text, std::vector<ncclDataType_t>* out) {
  std::vector<ncclDataType_t> types;
  if (text == "all") {
    for (int t = 0; t < ncclNumTypes; t++) types.push_back(static_cast<ncclDataType_t>(t));
  } else {
    for (const std::string& name : splitCommas(text)) {
      ncclDataType_t t;
      if (!parseType(name, &t)) return false;
      types.push_back(t);
    }
  }
  *out = types;
  return true;
}

bool parseOpList(const std::string& text, std::vector<ncclRedOp_t>* out) {
  std::vector<ncclRedOp_t> ops;
  if (text == "all") {
    for (int o = 0; o <= kMulSum; o++) ops.push_back(static_cast<ncclRedOp_t>(o));
  } else {
    for (const std::string& name : splitCommas(text)) {
      ncclRedOp_t o;
      if (!parseOp(name, &o)) return false;
      ops.push_back(o);
    }
  }
  *out = ops;
  return true;
}

bool resolveLayout(Options* opt, int visibleGpus, std::string* why) {
  int n = opt->nranks > 0 ? opt->nranks : visibleGpus;
  const int t = opt->threadsArg, g = opt->gpusArg;
  if (t == kAllGpus && g == kAllGpus) {
    *why = "-t and -g both without a count";
    return false;
  }
  Layout l;
  l.threads = t > 0 ? t : 1;
  l.gpus = g > 0 ? g : 1;
  if (opt->procFlag || (t == 0 && g == 0)) {
    if (t == kAllGpus || g == kAllGpus) {
      *why = "-p with -t or -g needs their counts";
      return false;
    }
    l.procs = n / (l.threads * l.gpus);
  } else {
    // One process. Counts given explicitly and no -N: exactly T x G ranks, as nccl-tests does.
    if (t == kAllGpus) l.threads = n / l.gpus;
    if (g == kAllGpus) l.gpus = n / l.threads;
    if (t != kAllGpus && g != kAllGpus && opt->nranks == 0) n = l.threads * l.gpus;
  }
  if (n < 1) {
    *why = "no GPU visible";
    return false;
  }
  if (l.procs < 1 || l.threads < 1 || l.gpus < 1 || l.nranks() != n) {
    *why = std::to_string(n) + " ranks cannot be split into processes of " + std::to_string(l.threads) + " threads x " +
           std::to_string(l.gpus) + " GPUs";
    return false;
  }
  if (opt->hosts > 0 && (l.procs % opt->hosts != 0)) {
    *why = "--hosts " + std::to_string(opt->hosts) + " needs a multiple of that many processes (" +
           std::to_string(l.procs) + " here; NCCL_HOSTID is per process)";
    return false;
  }
  l.hosts = opt->hosts;
  if (visibleGpus > 0 && n > visibleGpus) {
    // Ranks of different emulated hosts may share a GPU (NCCL refuses two ranks on one GPU only
    // inside a host): rank r on GPU r % visibleGpus, which keeps each host's ranks on distinct GPUs
    // when its rank count divides the GPU count.
    const int perHost = l.hosts > 0 ? n / l.hosts : n;
    if (perHost > visibleGpus || visibleGpus % perHost != 0) {
      *why = std::to_string(n) + " ranks need as many GPUs; " + std::to_string(visibleGpus) +
             " visible (with --hosts, hosts whose rank count divides the GPU count share them)";
      return false;
    }
    l.sharedGpus = visibleGpus;
  }
  if (!opt->isComm && collTraits(opt->coll).hasRoot && opt->root >= n) {
    *why = "root " + std::to_string(opt->root) + " is not below the " + std::to_string(n) + " ranks";
    return false;
  }
  opt->layout = l;
  return true;
}

std::vector<size_t> sweepSizes(const Options& opt) {
  std::vector<size_t> sizes;
  size_t cur = opt.minBytes;
  while (cur <= opt.maxBytes) {
    sizes.push_back(cur);
    size_t next = opt.stepBytes != 0 && !opt.factorGiven ? cur + opt.stepBytes : cur * opt.stepFactor;
    if (cur == 0) next = opt.stepBytes != 0 && !opt.factorGiven ? opt.stepBytes : 1;
    if (next <= cur) break;  // -f 1 with -b == -e
    cur = next;
  }
  return sizes;
}

std::vector<RowSpec> planRows(const Options& opt, int nranks) {
  std::vector<RowSpec> rows;
  const CollTraits& traits = collTraits(opt.coll);
  for (ncclDataType_t type : opt.types) {
    const size_t elemSize = typeInfo(type).size;
    for (ncclRedOp_t op : opt.ops) {
      for (size_t bytes : sweepSizes(opt)) {
        RowSpec row;
        row.coll = opt.coll;
        row.type = type;
        row.op = op;
        row.root = traits.hasRoot ? opt.root : -1;
        row.count = countForBytes(opt.coll, bytes, elemSize, nranks);
        row.bytes = bytesForCount(opt.coll, row.count, elemSize, nranks);
        rows.push_back(row);
      }
    }
  }
  return rows;
}

}  // namespace braidperf
