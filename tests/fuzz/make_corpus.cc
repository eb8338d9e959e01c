// Writes the fuzz corpora (corpus/<harness>/*): valid messages built the way the senders build
// them (the structs of bootstrap/wire.h, watch/board_wire.h, window/rma_wire.h, window/gin_wire.h
// and net/socket_net.h, encodeSocketHandshake and socketAuthProof; GIN descriptors by the layout
// nccl_device/gin_proxy.h documents), plus a few near misses. Run as `make_corpus
// tests/fuzz/corpus`; the output is committed.
#include <arpa/inet.h>
#include <nccl_device/gin_proxy.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "bootstrap/wire.h"
#include "common/gin_gfd_encode.h"
#include "handshake_fixture.h"
#include "net/socket_net.h"
#include "util/socket.h"
#include "util/socket_auth.h"
#include "watch/board_wire.h"
#include "window/gin_wire.h"
#include "window/rma_wire.h"

namespace {

using Bytes = std::vector<uint8_t>;

template <typename T>
Bytes bytesOf(const T& value) {
  Bytes out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

Bytes concat(Bytes a, const Bytes& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

bool write(const std::filesystem::path& dir, const std::string& name, const Bytes& bytes) {
  std::filesystem::create_directories(dir);
  std::ofstream out(dir / name, std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(bytes.data()), static_cast<std::streamsize>(bytes.size()));
  return static_cast<bool>(out);
}

braid::SocketAddress ipv4(const char* ip, uint16_t port) {
  braid::SocketAddress a{};
  a.sin.sin_family = AF_INET;
  a.sin.sin_port = htons(port);
  (void)inet_pton(AF_INET, ip, &a.sin.sin_addr);
  return a;
}

braid::SocketAddress ipv6(const char* ip, uint16_t port) {
  braid::SocketAddress a{};
  a.sin6.sin6_family = AF_INET6;
  a.sin6.sin6_port = htons(port);
  (void)inet_pton(AF_INET6, ip, &a.sin6.sin6_addr);
  return a;
}

braid::RootCheckIn checkIn(braid::CheckInKind kind, int rank, int nranks, int nroots, int root,
                           const braid::SocketAddress& listen) {
  braid::RootCheckIn in{};
  in.protocol = braid::kBootstrapProtocol;
  in.kind = static_cast<uint32_t>(kind);
  in.rank = rank;
  in.nranks = nranks;
  in.nroots = nroots;
  in.root = root;
  in.timeoutMs = 120000;
  in.pid = 4242;
  in.listen = listen;
  std::snprintf(in.host, sizeof(in.host), "node%d", rank);
  return in;
}

// A connector's message that proves the harness's key (handshake_fixture.h), then the acceptor's
// proof (what a connector receives), as the two sides compute them.
Bytes handshake(braid::SocketType type, uint8_t nonceSeed, bool validAnswer) {
  using braid::SocketAuthRole;
  const braid::SocketAuthKey key = braid::fuzz::handshakeKey();
  const braid::SocketNonce challenge = braid::fuzz::handshakeChallenge();
  braid::SocketHandshake h{static_cast<uint32_t>(type), {}, {}};
  for (size_t i = 0; i < h.connectorNonce.size(); ++i) h.connectorNonce[i] = static_cast<uint8_t>(nonceSeed + i);
  h.proof = braid::socketAuthProof(key, SocketAuthRole::kConnector, h.type, challenge, h.connectorNonce);
  Bytes out(braid::kSocketHandshakeBytes);
  braid::encodeSocketHandshake(h, out.data());
  braid::SocketProof answer =
      braid::socketAuthProof(key, SocketAuthRole::kAcceptor, h.type, challenge, h.connectorNonce);
  if (!validAnswer) answer = h.proof;  // a stranger that reflects the connector's proof
  return concat(out, Bytes(answer.begin(), answer.end()));
}

bool handshakes(const std::filesystem::path& dir) {
  bool ok = true;
  const braid::SocketType types[] = {braid::SocketType::kBootstrap, braid::SocketType::kProxy,
                                     braid::SocketType::kNetSocket, braid::SocketType::kRas};
  for (braid::SocketType type : types) {
    const uint32_t t = static_cast<uint32_t>(type);
    ok &= write(dir, "type" + std::to_string(t), handshake(type, static_cast<uint8_t>(t * 16), true));
  }
  Bytes badProof = handshake(braid::SocketType::kBootstrap, 1, true);
  badProof[braid::kSocketHandshakeBytes - 1] ^= 0x80;
  ok &= write(dir, "bad_proof", badProof);
  ok &= write(dir, "reflected_answer", handshake(braid::SocketType::kProxy, 2, false));
  Bytes message = handshake(braid::SocketType::kRas, 3, true);
  message.resize(braid::kSocketHandshakeBytes);
  ok &= write(dir, "with_hello", concat(message, bytesOf(braid::watch::BoardRequest{7, 0, 2})));
  return ok;
}

bool checkIns(const std::filesystem::path& dir) {
  using braid::CheckInKind;
  bool ok = write(dir, "member", bytesOf(checkIn(CheckInKind::kMember, 3, 8, 1, 0, ipv4("10.0.0.3", 41000))));
  ok &= write(dir, "member_ipv6", bytesOf(checkIn(CheckInKind::kMember, 5, 6, 2, 1, ipv6("fd00::5", 41000))));
  ok &= write(dir, "stitch", bytesOf(checkIn(CheckInKind::kStitch, 4, 8, 2, 0, ipv4("10.0.0.4", 41001))));
  braid::RootCheckIn wrong = checkIn(CheckInKind::kMember, 9, 8, 1, 0, ipv4("10.0.0.9", 41000));
  ok &= write(dir, "rank_out_of_range", bytesOf(wrong));
  return ok;
}

bool rootReplies(const std::filesystem::path& dir) {
  const uint64_t length = sizeof(braid::RootReply);
  braid::RootReply good{};
  good.result = ncclSuccess;
  good.next = ipv4("10.0.0.4", 41000);
  bool ok = write(dir, "ok", concat(bytesOf(length), bytesOf(good)));
  braid::RootReply failed{};
  failed.result = ncclRemoteError;
  std::snprintf(failed.message, sizeof(failed.message), "rank 3 (pid 17 on node3) never checked in after 120 s");
  ok &= write(dir, "failed", concat(bytesOf(length), bytesOf(failed)));
  return ok;
}

bool peerStreams(const std::filesystem::path& dir) {
  // The receiver's (rank, nranks) words as the harness reads them: rank 1 of 4.
  const uint32_t self[2] = {1, 2};
  Bytes stream = bytesOf(self);
  stream = concat(stream, bytesOf(braid::PeerHello{braid::kBootstrapProtocol, 2, 4, 0}));
  bool ok = write(dir, "hello", stream);
  const braid::PeerMsgKind kinds[] = {braid::PeerMsgKind::kUser, braid::PeerMsgKind::kAllGather,
                                      braid::PeerMsgKind::kBarrier, braid::PeerMsgKind::kBroadcast};
  for (braid::PeerMsgKind kind : kinds) {
    stream = concat(stream, bytesOf(braid::PeerMsgHeader{static_cast<uint32_t>(kind), 0, 64}));
  }
  ok &= write(dir, "hello_messages", stream);
  stream = concat(stream, bytesOf(braid::PeerMsgHeader{1, 2, braid::kBootstrapMaxQueuedBytes}));
  ok &= write(dir, "over_queue", stream);
  return ok;
}

bool boardWire(const std::filesystem::path& dir) {
  bool ok = write(dir, "request", concat(Bytes{0}, bytesOf(braid::watch::BoardRequest{0xfeedull, 1, 4})));
  const uint64_t expected = 4096;
  const braid::watch::BoardAnswerHeader answer{braid::watch::kBoardServerMagic, 123456789, expected};
  ok &= write(dir, "answer", concat(concat(Bytes{1}, bytesOf(expected)), bytesOf(answer)));
  const braid::watch::BoardAnswerHeader none{braid::watch::kBoardServerMagic, 123456789, 0};
  ok &= write(dir, "answer_none", concat(concat(Bytes{1}, bytesOf(expected)), bytesOf(none)));
  return ok;
}

bool socketNetHellos(const std::filesystem::path& dir) {
  // A connection of 2 data sockets as socketNetConnect sends it: control socket, then the data sockets.
  Bytes stream;
  for (uint32_t i = 0; i <= 2; ++i) stream = concat(stream, bytesOf(braid::net::SocketNetHello{0xc0ffee, i, 2}));
  bool ok = write(dir, "one_connection", stream);
  Bytes interleaved;
  for (uint32_t i = 0; i <= 1; ++i) {
    interleaved = concat(interleaved, bytesOf(braid::net::SocketNetHello{1, i, 1}));
    interleaved = concat(interleaved, bytesOf(braid::net::SocketNetHello{2, i, 1}));
  }
  ok &= write(dir, "two_connections", interleaved);
  ok &= write(dir, "max_socks", bytesOf(braid::net::SocketNetHello{3, 64, 64}));
  return ok;
}

bool udsDatagrams(const std::filesystem::path& dir) {
  // A registration's descriptor note as the registration exchange sends it ({int32 rank, int32
  // pad, uint64 serial}, one descriptor), after the harness's two bytes: descriptors, expected size.
  struct Note {
    int32_t rank;
    int32_t pad;
    uint64_t serial;
  };
  const Bytes note = bytesOf(Note{3, 0, 17});
  bool ok = write(dir, "note", concat(Bytes{1, sizeof(Note)}, note));
  ok &= write(dir, "note_two_fds", concat(Bytes{2, sizeof(Note)}, note));
  ok &= write(dir, "note_no_fd", concat(Bytes{0, sizeof(Note)}, note));
  ok &= write(dir, "note_short", concat(Bytes{1, sizeof(Note) + 4}, note));
  return ok;
}

}  // namespace

// Input of rma_chunk_fuzz: contexts, signals, the receiver's window size, then the message.
bool rmaChunks(const std::filesystem::path& dir) {
  const auto input = [](uint64_t window, const braid::window::ChunkHeader& h, size_t payload) {
    Bytes head = concat(Bytes{4, 2}, bytesOf(window));
    return concat(concat(head, bytesOf(h)), Bytes(payload, 0xab));
  };
  bool ok = write(dir, "chunk", input(1 << 20, braid::window::chunkHeader(7, 4096, 300, 1, 0, false), 300));
  ok &= write(dir, "last_chunk", input(1 << 20, braid::window::chunkHeader(7, 0, 64, 3, 1, true), 64));
  ok &= write(dir, "signal_only", input(0, braid::window::chunkHeader(0, 0, 0, 0, 0, true), 0));
  ok &= write(dir, "past_the_end", input(4096, braid::window::chunkHeader(7, 4000, 200, 0, 0, true), 200));
  ok &= write(dir, "bad_ctx", input(1 << 20, braid::window::chunkHeader(7, 0, 8, 9, 0, true), 8));
  return ok;
}

namespace {

using braid::testing::encodeGfd;
using braid::testing::GfdFields;

// Input of gin_gfd_fuzz: one GFD, 128 bytes.
bool ginGfds(const std::filesystem::path& dir) {
  GfdFields put;
  put.op = ncclGinProxyOpPut | ncclGinProxyOpWithCounter | ncclGinProxyOpWithSignalInc;
  put.bytes = 4096;
  put.srcOffset = 64;
  put.srcHandle = 3;
  put.dstOffset = 8192;
  put.dstHandle = 5;
  put.counterId = 7;
  put.signalId = 2;
  bool ok = write(dir, "put_counter_inc", bytesOf(encodeGfd(put)));
  GfdFields add = put;
  add.op = ncclGinProxyOpPut | ncclGinProxyOpWithSignalAdd;
  add.counterId = 0;
  add.signalId = 0xabcdef;
  add.signalValue = 0x0123456789abcdefull;
  add.strong = true;
  ok &= write(dir, "put_signal_add64", bytesOf(encodeGfd(add)));
  GfdFields value;
  value.op = ncclGinProxyOpPut | ncclGinProxyOpWithInline;
  value.bytes = 8;
  value.hasInline = true;
  value.inlineValue = 0xfedcba9876543210ull;
  value.dstOffset = 24;
  value.dstHandle = 5;
  ok &= write(dir, "put_value8", bytesOf(encodeGfd(value)));
  GfdFields va;
  va.op = ncclGinProxyOpVASignal | ncclGinProxyOpWithSignalAdd;
  va.srcOffset = 4096;  // the signal word's offset
  va.srcHandle = 9;     // its window
  va.signalValue = uint64_t{1} << 40 | 5;
  ok &= write(dir, "va_signal_add", bytesOf(encodeGfd(va)));
  GfdFields flush;
  flush.op = ncclGinProxyOpFlush;
  ok &= write(dir, "flush", bytesOf(encodeGfd(flush)));
  GfdFields get;
  get.op = ncclGinProxyOpGet;
  get.bytes = 1024;
  get.srcOffset = 512;  // the remote source
  get.srcHandle = 4;
  get.dstOffset = 0;
  get.dstHandle = 6;
  ok &= write(dir, "get", bytesOf(encodeGfd(get)));
  // The device has made four of its eight 16-byte stores: words 8-15 lack their flag.
  ncclGinProxyGfd_t half = encodeGfd(put);
  for (int i = 8; i < ncclGinProxyGfdQwords; ++i) half.qword[i] = 0;
  ok &= write(dir, "half_written", bytesOf(half));
  return ok;
}

// Input of gin_wire_fuzz: contexts, the receiver's window size, then the message.
bool ginMessages(const std::filesystem::path& dir) {
  const auto input = [](uint8_t contexts, uint64_t window, const braid::window::GinHeader& h, size_t payload) {
    Bytes head = concat(Bytes{contexts}, bytesOf(window));
    return concat(concat(head, bytesOf(h)), Bytes(payload, 0xcd));
  };
  using braid::window::GinHeader;
  GinHeader chunk{};
  chunk.magic = braid::window::kGinMagic;
  chunk.devComm = 11;
  chunk.serial = 5;
  chunk.offset = 4096;
  chunk.bytes = 300;
  chunk.context = 1;
  bool ok = write(dir, "data_chunk", input(4, 1 << 20, chunk, 300));
  GinHeader last = chunk;
  last.flags = braid::window::kGinLast | braid::window::kGinSignalAdd;
  last.offset = 4396;
  last.bytes = 64;
  last.value = 0x0123456789abcdefull;
  last.signal = 3;
  ok &= write(dir, "last_signal", input(4, 1 << 20, last, 64));
  GinHeader va = chunk;
  va.flags = braid::window::kGinVaSignal | braid::window::kGinLast | braid::window::kGinSignalInc;
  va.serial = 9;
  va.offset = 8;
  va.bytes = 0;
  va.value = 1;
  ok &= write(dir, "va_signal", input(4, 1 << 20, va, 0));
  GinHeader request = chunk;
  request.flags = braid::window::kGinGetRequest | braid::window::kGinLast;
  request.bytes = 0;
  request.value = 1 << 16;
  request.tag = 3;
  ok &= write(dir, "get_request", input(4, 1 << 20, request, 0));
  GinHeader reply = chunk;
  reply.flags = braid::window::kGinGetReply | braid::window::kGinLast;
  reply.serial = 0;
  reply.offset = 0;
  reply.tag = 3;
  ok &= write(dir, "get_reply", input(4, 1 << 20, reply, 300));
  GinHeader badContext = chunk;
  badContext.context = 9;
  ok &= write(dir, "bad_context", input(4, 1 << 20, badContext, 300));
  GinHeader badFlags = last;
  badFlags.flags |= 16;
  ok &= write(dir, "bad_flags", input(4, 1 << 20, badFlags, 64));
  return ok;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: %s CORPUS_DIR (tests/fuzz/corpus)\n", argv[0]);
    return 2;
  }
  const std::filesystem::path root(argv[1]);
  bool ok = handshakes(root / "socket_handshake_fuzz");
  ok &= checkIns(root / "root_checkin_fuzz");
  ok &= rootReplies(root / "root_reply_fuzz");
  ok &= peerStreams(root / "bootstrap_peer_fuzz");
  ok &= boardWire(root / "board_wire_fuzz");
  ok &= socketNetHellos(root / "socket_net_hello_fuzz");
  ok &= udsDatagrams(root / "uds_datagram_fuzz");
  ok &= rmaChunks(root / "rma_chunk_fuzz");
  ok &= ginGfds(root / "gin_gfd_fuzz");
  ok &= ginMessages(root / "gin_wire_fuzz");
  if (!ok) std::fprintf(stderr, "could not write every corpus file under %s\n", argv[1]);
  return ok ? 0 : 1;
}
