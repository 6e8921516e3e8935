// The Redis tier's --kv-store spelling: redis://[[USER]:PASSWORD@]HOST[:PORT][,HOST[:PORT]...][/DB].
// One host is a standalone Redis or any node of a cluster (the tier asks which); several name
// seed nodes of one cluster, tried in order until one answers.
#pragma once

#include <string>
#include <vector>

#include "core/status.h"
#include "store/redis_slots.h"

namespace lazyattn::store {

struct RedisAddress {
    std::string user;      // ACL user ("" = the default user)
    std::string password;  // "" = no AUTH
    std::string host;      // the first seed's
    int port = 6379;
    int db = 0;
    std::vector<RedisEndpoint> seeds;  // every HOST:PORT given, in order (at least one)
};

// Parses the URL (userinfo percent-decoded; kInvalidArgument naming what is wrong, never
// echoing the password).
Expected<RedisAddress> parse_redis_url(const std::string& url);
// The URL with any password replaced by "***" (for logs, errors and stats).
std::string redact_redis_url(const std::string& url);

}  // namespace lazyattn::store
