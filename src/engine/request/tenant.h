// Tenants: the cache namespace of a request. The server gives each API key an account (its
// tenant, "" without keys); a request's `cache_salt` splits the account's namespace further, so
// salted requests share cached KV only with the same salt. Quotas (pinned blocks) belong to the
// account, never to a salted namespace: a key cannot multiply its quota by inventing salts.
// This file is the one place the tenant string is composed and taken apart.
#pragma once

#include <string>
#include <string_view>

namespace lazyattn::engine {

inline constexpr std::string_view kSaltSeparator = "|salt:";

// The tenant of `account`'s requests under `cache_salt` ("" = unsalted).
inline std::string salted_tenant(std::string account, std::string_view cache_salt) {
    if (!cache_salt.empty()) {
        account += kSaltSeparator;
        account += cache_salt;
    }
    return account;
}

// The account a tenant belongs to (what quotas are counted against).
inline std::string tenant_account(std::string_view tenant) {
    return std::string(tenant.substr(0, tenant.find(kSaltSeparator)));
}

}  // namespace lazyattn::engine
