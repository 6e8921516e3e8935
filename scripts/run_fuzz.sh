#!/usr/bin/env bash
# Fuzzes with libFuzzer, ASan and UBSan:
#   gguf    the GGUF reader (GgufFile::parse -> ModelConfig -> dequantization)
#   http    raw client bytes -> HTTP request parser -> JSON checks -> OpenAI request parser,
#           API key headers -> key matcher
#   redis   bytes a Redis node answers -> bounded hiredis reader -> slot map, redirections
#   scripts/run_fuzz.sh [seconds=600] [target=gguf] [extra libFuzzer flags...]
# Builds build-fuzz with clang, keeps discovered inputs in build-fuzz/fuzz/corpus-<target> and
# crashes in build-fuzz/fuzz/artifacts. One worker; run it under `nice` on a shared machine.
# Exit status is libFuzzer's: 0 when no crash was found.
set -euo pipefail
cd "$(dirname "$0")/.."

DURATION=${1:-600}
[ $# -gt 0 ] && shift
TARGET=${1:-gguf}
[ $# -gt 0 ] && shift
BUILD=${LAZYATTN_FUZZ_BUILD:-build-fuzz}
JOBS=${JOBS:-2}

if [ ! -f "$BUILD/CMakeCache.txt" ]; then
  CC=clang CXX=clang++ cmake -S . -B "$BUILD" -G Ninja -DLAZYATTN_FUZZ=ON -DLAZYATTN_TESTS=OFF \
    -DCMAKE_BUILD_TYPE=RelWithDebInfo
fi

FUZZ_DIR=$BUILD/fuzz
mkdir -p "$FUZZ_DIR/corpus-$TARGET" "$FUZZ_DIR/artifacts"
case "$TARGET" in
  gguf)
    cmake --build "$BUILD" --target fuzz_gguf_reader fuzz_gguf_seeds -j"$JOBS"
    mkdir -p "$FUZZ_DIR/seeds"
    "$FUZZ_DIR/fuzz_gguf_seeds" "$FUZZ_DIR/seeds"
    BIN=$FUZZ_DIR/fuzz_gguf_reader; DICT=fuzz/gguf.dict; SEEDS=$FUZZ_DIR/seeds ;;
  http)
    cmake --build "$BUILD" --target fuzz_http_request -j"$JOBS"
    SEEDS=$FUZZ_DIR/seeds-http
    mkdir -p "$SEEDS"
    # Seeds: the first byte picks the read size, the rest is what a client sends.
    printf '\x07POST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 33\r\n\r\n{"prompt": "hi", "max_tokens": 4}' > "$SEEDS/plain"
    printf '\x01POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n2a\r\n{"messages": [{"role": "user", "content": "x"}]}\r\n0\r\n\r\n' > "$SEEDS/chunked"
    printf '\x03GET /health HTTP/1.1\r\nHost: x\r\n\r\nPOST /v1/completions HTTP/1.1\r\nHost: x\r\nContent-Length: 60\r\n\r\n{"prompt": [1, 2], "stop": ["a"], "documents": ["d", {"id": "x"}]}' > "$SEEDS/pipelined"
    body='{"messages": [{"role": "user", "content": "x"}], "n_predict": 8, "grammar": "", "document_reuse": "recompute=10%@query"}'
    printf '\x05POST /chat/completions HTTP/1.1\r\nHost: x\r\nX-Api-Key: fuzz-key-1,k2\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body" > "$SEEDS/llama-server"
    body='{"model": "m", "max_tokens": 4, "system": [{"type": "text", "text": "s"}], "messages": [{"role": "user", "content": [{"type": "document", "source": {"type": "text", "media_type": "text/plain", "data": "d"}, "title": "t", "cache_control": {"type": "ephemeral"}}, {"type": "text", "text": "q"}]}], "stop_sequences": ["x"]}'
    printf '\x04POST /v1/messages HTTP/1.1\r\nHost: x\r\nanthropic-version: 2023-06-01\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body" > "$SEEDS/anthropic"
    body='{"prompt": [1, "a", 2], "n_predict": 4, "n_probs": 2, "logit_bias": [[" x ", false], [3, -1]], "samplers": "kt", "id_slot": 1, "response_fields": ["content"], "documents": ["d"]}'
    printf '\x06POST /completion HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body" > "$SEEDS/native"
    body='{"prompt": ["a", {"prompt_string": "b"}, [5]], "logit_bias": {"7": 1, "hi": -2}, "mirostat": 0, "repeat_penalty": 1.1}'
    printf '\x02POST /completions HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n%s' "${#body}" "$body" > "$SEEDS/native-list"
    BIN=$FUZZ_DIR/fuzz_http_request; DICT=fuzz/http.dict ;;
  redis)
    cmake --build "$BUILD" --target fuzz_redis_reply -j"$JOBS"
    SEEDS=$FUZZ_DIR/seeds-redis
    mkdir -p "$SEEDS"
    # Seeds: a slot map with a master listed without an address, redirections, nesting, a huge header.
    printf '\x03*2\r\n*3\r\n:0\r\n:8191\r\n*3\r\n$9\r\n127.0.0.1\r\n:7000\r\n$2\r\nid\r\n*3\r\n:8192\r\n:16383\r\n*3\r\n$0\r\n\r\n:0\r\n$3\r\nid2\r\n' > "$SEEDS/slots"
    printf '\x07-MOVED 3999 127.0.0.1:6381\r\n-ASK 12 :7002\r\n+OK\r\n$5\r\nhello\r\n:42\r\n$-1\r\n' > "$SEEDS/redirects"
    printf '\x01*2000000000\r\n' > "$SEEDS/huge-array"
    printf '\x02*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n*1\r\n:1\r\n' > "$SEEDS/nested"
    BIN=$FUZZ_DIR/fuzz_redis_reply; DICT=fuzz/redis.dict ;;
  *) echo "unknown fuzz target '$TARGET' (gguf | http | redis)" >&2; exit 2 ;;
esac

# The first corpus directory receives new interesting inputs; the seeds are read only.
exec "$BIN" \
  -max_total_time="$DURATION" \
  -dict="$DICT" \
  -artifact_prefix="$FUZZ_DIR/artifacts/" \
  -timeout=10 -rss_limit_mb=2048 -print_final_stats=1 \
  "$@" "$FUZZ_DIR/corpus-$TARGET" "$SEEDS"
