// The parsers of what peers send (bootstrap/wire.h, core/board_wire.h, the socket handshake, the
// socket network's hello), as pure functions: each refuses wrong sizes and out-of-range fields,
// and accepts what the senders send. The fuzz harnesses of tests/fuzz/ run the same functions on
// arbitrary bytes.
#include <arpa/inet.h>
#include <gtest/gtest.h>

#include <cstring>
#include <string>
#include <vector>

#include "bootstrap/wire.h"
#include "core/board_wire.h"
#include "net/socket_net.h"
#include "util/socket.h"
#include "util/socket_auth.h"

namespace braid {
namespace {

template <typename T>
std::vector<uint8_t> bytesOf(const T& value) {
  std::vector<uint8_t> out(sizeof(T));
  std::memcpy(out.data(), &value, sizeof(T));
  return out;
}

RootCheckIn goodCheckIn() {
  RootCheckIn in{};
  in.protocol = kBootstrapProtocol;
  in.kind = static_cast<uint32_t>(CheckInKind::kMember);
  in.rank = 5;
  in.nranks = 8;
  in.nroots = 2;
  in.root = 1;
  in.timeoutMs = 1000;
  in.listen.sin.sin_family = AF_INET;
  in.listen.sin.sin_port = htons(4000);
  in.listen.sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  std::memset(in.host, 'h', sizeof(in.host));  // not terminated: the parser terminates it
  return in;
}

ncclResult_t parseCheckIn(const RootCheckIn& in, RootCheckIn* out, std::string* why) {
  const std::vector<uint8_t> b = bytesOf(in);
  return parseRootCheckIn(b.data(), b.size(), out, why);
}

TEST(WireParse, SocketHandshakeRoundTripsAndProvesOnlyItsKey) {
  SocketAuthKey key{};
  key.fill(0x42);
  SocketNonce challenge{};
  challenge.fill(0x17);
  SocketHandshake sent{static_cast<uint32_t>(SocketType::kProxy), {}, {}};
  for (size_t i = 0; i < sent.connectorNonce.size(); ++i) sent.connectorNonce[i] = static_cast<uint8_t>(3 * i + 1);
  sent.proof = socketAuthProof(key, SocketAuthRole::kConnector, sent.type, challenge, sent.connectorNonce);
  uint8_t bytes[kSocketHandshakeBytes + 4] = {};
  encodeSocketHandshake(sent, bytes);
  SocketHandshake h{};
  ASSERT_EQ(parseSocketHandshake(bytes, sizeof(bytes), &h), ncclSuccess);  // a hello may follow
  EXPECT_EQ(h.type, static_cast<uint32_t>(SocketType::kProxy));
  EXPECT_EQ(h.connectorNonce, sent.connectorNonce);
  EXPECT_EQ(h.proof, sent.proof);
  EXPECT_TRUE(socketHandshakeProves(h, key, challenge));
  SocketNonce replayed = challenge;
  replayed[5] ^= 1;
  EXPECT_FALSE(socketHandshakeProves(h, key, replayed));
  SocketAuthKey otherKey = key;
  otherKey[31] ^= 1;
  EXPECT_FALSE(socketHandshakeProves(h, otherKey, challenge));
  SocketHandshake otherType = h;
  otherType.type = static_cast<uint32_t>(SocketType::kBootstrap);
  EXPECT_FALSE(socketHandshakeProves(otherType, key, challenge));
  // The acceptor's answer: its own proof passes, the connector's reflected back does not.
  const SocketProof answer = socketAuthProof(key, SocketAuthRole::kAcceptor, h.type, challenge, h.connectorNonce);
  EXPECT_TRUE(socketAcceptorProofValid(key, h.type, challenge, h.connectorNonce, answer));
  EXPECT_FALSE(socketAcceptorProofValid(key, h.type, challenge, h.connectorNonce, h.proof));
  EXPECT_FALSE(socketAcceptorProofValid(otherKey, h.type, challenge, h.connectorNonce, answer));
  EXPECT_EQ(parseSocketHandshake(bytes, kSocketHandshakeBytes - 1, &h), ncclInvalidUsage);
  EXPECT_EQ(parseSocketHandshake(nullptr, 0, &h), ncclInvalidUsage);
}

TEST(WireParse, RootCheckInAcceptsWhatRanksSend) {
  RootCheckIn out{};
  std::string why = "stale";
  ASSERT_EQ(parseCheckIn(goodCheckIn(), &out, &why), ncclSuccess) << why;
  EXPECT_TRUE(why.empty());
  EXPECT_EQ(out.rank, 5);
  EXPECT_EQ(out.host[sizeof(out.host) - 1], '\0');
  EXPECT_EQ(std::string(out.host), std::string(sizeof(out.host) - 1, 'h'));
}

TEST(WireParse, RootCheckInRefusesEveryOutOfRangeField) {
  struct Case {
    const char* what;
    void (*spoil)(RootCheckIn*);
    const char* said;
  };
  const Case cases[] = {
      {"protocol", [](RootCheckIn* in) { in->protocol ^= 1; }, "protocol"},
      {"kind", [](RootCheckIn* in) { in->kind = 3; }, "kind 3"},
      {"nranks 0", [](RootCheckIn* in) { in->nranks = 0; }, "nranks=0"},
      {"nranks huge", [](RootCheckIn* in) { in->nranks = kBootstrapMaxRanks + 1; }, "nranks="},
      {"nroots 0", [](RootCheckIn* in) { in->nroots = 0; }, "does not fit"},
      {"nroots > nranks", [](RootCheckIn* in) { in->nroots = 9; }, "does not fit"},
      {"root < 0", [](RootCheckIn* in) { in->root = -1; }, "does not fit"},
      {"root >= nroots", [](RootCheckIn* in) { in->root = 2; }, "does not fit"},
      {"rank < 0", [](RootCheckIn* in) { in->rank = -1; }, "rank -1"},
      {"rank >= nranks", [](RootCheckIn* in) { in->rank = 8; }, "rank 8"},
      {"address", [](RootCheckIn* in) { in->listen.sa.sa_family = AF_UNIX; }, "listener address"},
  };
  for (const Case& c : cases) {
    RootCheckIn in = goodCheckIn();
    c.spoil(&in);
    RootCheckIn out{};
    std::string why;
    EXPECT_EQ(parseCheckIn(in, &out, &why), ncclInvalidUsage) << c.what;
    EXPECT_NE(why.find(c.said), std::string::npos) << c.what << ": " << why;
    EXPECT_EQ(out.pid, in.pid) << c.what << ": the caller names the sender from *out";
  }
  const std::vector<uint8_t> b = bytesOf(goodCheckIn());
  RootCheckIn out{};
  std::string why;
  EXPECT_EQ(parseRootCheckIn(b.data(), b.size() - 1, &out, &why), ncclInvalidUsage);
  EXPECT_NE(why.find("expected"), std::string::npos) << why;
  EXPECT_EQ(parseRootCheckIn(nullptr, b.size(), &out, &why), ncclInvalidUsage);
}

std::vector<uint8_t> replyFrame(uint64_t length, const RootReply& reply) {
  std::vector<uint8_t> frame = bytesOf(length);
  const std::vector<uint8_t> body = bytesOf(reply);
  frame.insert(frame.end(), body.begin(), body.end());
  return frame;
}

TEST(WireParse, RootReplyFrameMapsResultsAndTerminatesTheMessage) {
  RootReply reply{};
  reply.result = ncclRemoteError;
  std::memset(reply.message, 'x', sizeof(reply.message));
  std::vector<uint8_t> frame = replyFrame(sizeof(RootReply), reply);
  RootReply out{};
  ncclResult_t result = ncclSuccess;
  std::string why;
  ASSERT_EQ(parseRootReplyFrame(frame.data(), frame.size(), &out, &result, &why), ncclSuccess) << why;
  EXPECT_EQ(result, ncclRemoteError);
  EXPECT_EQ(std::strlen(out.message), sizeof(out.message) - 1);

  for (int code : {-1, static_cast<int>(ncclNumResults), 1 << 30}) {
    reply.result = code;
    frame = replyFrame(sizeof(RootReply), reply);
    ASSERT_EQ(parseRootReplyFrame(frame.data(), frame.size(), &out, &result, &why), ncclSuccess);
    EXPECT_EQ(result, ncclInternalError) << "code " << code;
  }
  frame = replyFrame(sizeof(RootReply) - 1, reply);
  EXPECT_EQ(parseRootReplyFrame(frame.data(), frame.size(), &out, &result, &why), ncclInternalError);
  EXPECT_NE(why.find("mismatched"), std::string::npos) << why;
  EXPECT_EQ(parseRootReplyFrame(frame.data(), frame.size() - 1, &out, &result, &why), ncclInternalError);
}

TEST(WireParse, PeerHelloMustNameAnotherRankOfTheSameJob) {
  PeerHello out{};
  std::string why;
  auto parse = [&](PeerHello hello) {
    const std::vector<uint8_t> b = bytesOf(hello);
    return parsePeerHello(b.data(), b.size(), /*rank=*/1, /*nranks=*/4, &out, &why);
  };
  EXPECT_EQ(parse({kBootstrapProtocol, 2, 4, 0}), ncclSuccess);
  EXPECT_EQ(parse({kBootstrapProtocol, 1, 4, 0}), ncclInvalidUsage);  // this rank itself
  EXPECT_EQ(parse({kBootstrapProtocol, 4, 4, 0}), ncclInvalidUsage);
  EXPECT_EQ(parse({kBootstrapProtocol, -1, 4, 0}), ncclInvalidUsage);
  EXPECT_EQ(parse({kBootstrapProtocol, 2, 5, 0}), ncclInvalidUsage);
  EXPECT_EQ(parse({kBootstrapProtocol + 1, 2, 4, 0}), ncclInvalidUsage);
  EXPECT_NE(why.find("protocol"), std::string::npos) << why;
}

TEST(WireParse, PeerMessageHeaderKindsAndQueueBound) {
  PeerMsgHeader out{};
  std::string why;
  for (uint32_t kind = 0; kind <= 5; ++kind) {
    const std::vector<uint8_t> b = bytesOf(PeerMsgHeader{kind, 7, 100});
    const bool known = kind >= 1 && kind <= 4;
    EXPECT_EQ(parsePeerMsgHeader(b.data(), b.size(), &out, &why), known ? ncclSuccess : ncclInternalError) << kind;
  }
  const std::vector<uint8_t> b = bytesOf(PeerMsgHeader{1, 7, 100});
  EXPECT_EQ(parsePeerMsgHeader(b.data(), b.size() - 1, &out, &why), ncclInternalError);

  EXPECT_TRUE(peerMsgFitsQueue(kBootstrapMaxQueuedBytes, 0));
  EXPECT_FALSE(peerMsgFitsQueue(kBootstrapMaxQueuedBytes + 1, 0));
  EXPECT_TRUE(peerMsgFitsQueue(10, kBootstrapMaxQueuedBytes - 10));
  EXPECT_FALSE(peerMsgFitsQueue(11, kBootstrapMaxQueuedBytes - 10));
  EXPECT_FALSE(peerMsgFitsQueue(UINT64_MAX, 1));
  EXPECT_TRUE(peerMsgFitsQueue(0, UINT64_MAX));  // an empty message never overflows the count
  EXPECT_FALSE(peerMsgFitsQueue(1, UINT64_MAX));
}

TEST(WireParse, BoardRequestAndAnswerHeader) {
  BoardRequest r{};
  std::vector<uint8_t> b = bytesOf(BoardRequest{42, 3, 4});
  EXPECT_TRUE(parseBoardRequest(b.data(), b.size(), &r));
  EXPECT_EQ(r.commHash, 42u);
  EXPECT_FALSE(parseBoardRequest(b.data(), b.size() - 1, &r));
  for (const BoardRequest& bad : {BoardRequest{42, 4, 4}, BoardRequest{42, -1, 4}, BoardRequest{42, 0, 0},
                                  BoardRequest{42, 0, kMaxBoardRanks + 1}}) {
    b = bytesOf(bad);
    EXPECT_FALSE(parseBoardRequest(b.data(), b.size(), &r)) << bad.rank << " of " << bad.nRanks;
  }
  BoardAnswerHeader h{};
  b = bytesOf(BoardAnswerHeader{kBoardServerMagic, 1, 4096});
  EXPECT_TRUE(parseBoardAnswerHeader(b.data(), b.size(), 4096, &h));
  EXPECT_FALSE(parseBoardAnswerHeader(b.data(), b.size(), 4104, &h));  // another board size: refused
  b = bytesOf(BoardAnswerHeader{kBoardServerMagic + 1, 1, 4096});
  EXPECT_FALSE(parseBoardAnswerHeader(b.data(), b.size(), 4096, &h));
  b = bytesOf(BoardAnswerHeader{kBoardServerMagic, 1, 0});
  EXPECT_FALSE(parseBoardAnswerHeader(b.data(), b.size(), 4096, &h));  // "no such board"
}

TEST(WireParse, SocketNetHelloIndexesInsideItsConnection) {
  using net::SocketNetHello;
  SocketNetHello h{};
  std::vector<uint8_t> b = bytesOf(SocketNetHello{9, 2, 2});
  EXPECT_TRUE(net::parseSocketNetHello(b.data(), b.size(), &h));
  EXPECT_EQ(h.connId, 9u);
  EXPECT_FALSE(net::parseSocketNetHello(b.data(), b.size() - 1, &h));
  for (const SocketNetHello& bad : {SocketNetHello{9, 3, 2}, SocketNetHello{9, 0, 0},
                                    SocketNetHello{9, 0, net::kSocketNetMaxSocks + 1}, SocketNetHello{9, ~0u, ~0u}}) {
    b = bytesOf(bad);
    EXPECT_FALSE(net::parseSocketNetHello(b.data(), b.size(), &h)) << bad.index << " of " << bad.nSocks;
  }
}

}  // namespace
}  // namespace braid
