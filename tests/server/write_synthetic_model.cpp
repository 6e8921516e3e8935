// write_synthetic_model PATH [CONTEXT_LENGTH]: writes the tiny random-weight model the Python
// server tests serve (the same generator the C++ tests use).
#include <cstdio>
#include <cstdlib>

#include "synthetic/synthetic_model.h"

int main(int argc, char** argv) {
    if (argc < 2) {
        std::fprintf(stderr, "usage: write_synthetic_model PATH [CONTEXT_LENGTH]\n");
        return 2;
    }
    lazyattn::synthetic::SyntheticModelOptions o;
    if (argc > 2) o.context_length = std::atoi(argv[2]);
    const lazyattn::Status st = lazyattn::synthetic::write_synthetic_model(argv[1], o);
    if (!st.ok()) {
        std::fprintf(stderr, "error: %s\n", st.to_string().c_str());
        return 1;
    }
    return 0;
}
