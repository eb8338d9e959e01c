// What the board server (board_server.cc) and the ranks that ask it for a progress board send each
// other, and the parsers of what arrives: pure functions of the received bytes, called by the
// server and the client and by the fuzz harnesses of tests/fuzz/. Sent as raw bytes in host byte
// order, after a socket handshake with kBoardServerMagic.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>

namespace braid {

constexpr uint64_t kBoardServerMagic = 0x4252414944425244ull;  // "BRAIDBRD": the handshake and the answer
constexpr int kMaxBoardRanks = 1 << 20;                        // a request for more is garbage

// Client -> server: the board of (commHash, rank) of a communicator of nRanks ranks.
struct BoardRequest {
  uint64_t commHash;
  int32_t rank;
  int32_t nRanks;
};

// Server -> client, followed by `bytes` of board.
struct BoardAnswerHeader {
  uint64_t magic;
  int64_t nowNs;   // the server's CLOCK_MONOTONIC as it copied the board
  uint64_t bytes;  // of the board that follows; 0: no such board here
};

// A request the server can look up: its exact size and a rank inside a communicator of a size
// that some process could have. Anything else is answered "no such board".
inline bool parseBoardRequest(const uint8_t* data, size_t size, BoardRequest* out) {
  if (data == nullptr || size != sizeof(BoardRequest)) return false;
  std::memcpy(out, data, sizeof(BoardRequest));
  return out->nRanks >= 1 && out->nRanks <= kMaxBoardRanks && out->rank >= 0 && out->rank < out->nRanks;
}

// An answer header that announces exactly the board the client asked for (`expectedBytes`, the
// size of a board of its nRanks): the client then reads that many bytes and nothing else.
inline bool parseBoardAnswerHeader(const uint8_t* data, size_t size, size_t expectedBytes, BoardAnswerHeader* out) {
  if (data == nullptr || size != sizeof(BoardAnswerHeader)) return false;
  std::memcpy(out, data, sizeof(BoardAnswerHeader));
  return out->magic == kBoardServerMagic && out->bytes == expectedBytes;
}

}  // namespace braid
