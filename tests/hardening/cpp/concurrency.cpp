// Two programs, and two instances of each, executing at once from several threads: every
// result must equal the serial run of the same instance and inputs.  Built with
// -fsanitize=thread, so a data race in the adapter, engine or lock fails the run (TSan exit
// code) even when the numbers happen to come out right.
//
//   concurrency A.pte B.pte [ITERATIONS]
//
// Threads: one per instance (A#0, A#1, B#0, B#1) executing ITERATIONS times, plus one per
// program that loads a fresh Method (backend init), runs it and destroys it, ITERATIONS/4
// times, so init/destroy race with execute.  Prints one summary line; exit 0 iff no mismatch.
#include "harness.h"

#include <atomic>
#include <thread>

using namespace hardening;

namespace {

struct Worker {
    Pte *pte;
    uint32_t seed;
    std::vector<std::vector<unsigned char>> expected;
};

std::atomic<int> g_ready{0};
std::atomic<uint64_t> g_runs{0}, g_mismatches{0}, g_errors{0}, g_inits{0};

void wait_for(int n) {
    g_ready.fetch_add(1);
    while (g_ready.load() < n) {
        std::this_thread::yield();
    }
}

void check(const Worker &w, et::Error err, const std::vector<std::vector<unsigned char>> &got,
           const char *what) {
    if (err != et::Error::Ok) {
        std::fprintf(stderr, "%s seed %u: error 0x%x: %s\n", what, w.seed,
                     static_cast<unsigned>(err), last_error().c_str());
        g_errors.fetch_add(1);
    } else if (got != w.expected) {
        std::fprintf(stderr, "%s seed %u: outputs differ from the serial run\n", what, w.seed);
        g_mismatches.fetch_add(1);
    }
    g_runs.fetch_add(1);
}

} // namespace

int main(int argc, char **argv) {
    if (argc < 3) {
        std::fprintf(stderr, "usage: concurrency A.pte B.pte [ITERATIONS]\n");
        return 2;
    }
    const int iterations = argc > 3 ? std::atoi(argv[3]) : 20;
    et::runtime_init();
    if (executorch_espnn_register_backend() != 0) {
        std::fprintf(stderr, "registration failed: %s\n", last_error().c_str());
        return 1;
    }
    Pte a, b;
    if (!a.read(argv[1]) || !b.read(argv[2])) {
        return 1;
    }

    // serial reference: each instance with its own inputs
    std::vector<Worker> workers = {{&a, 1, {}}, {&a, 2, {}}, {&b, 3, {}}, {&b, 4, {}}};
    std::vector<std::unique_ptr<Instance>> instances;
    for (auto &w : workers) {
        instances.push_back(std::make_unique<Instance>(*w.pte));
        if (instances.back()->load() != et::Error::Ok ||
            instances.back()->run(w.seed, &w.expected) != et::Error::Ok) {
            std::fprintf(stderr, "serial run failed: %s\n", last_error().c_str());
            return 1;
        }
    }
    if (workers[0].expected == workers[1].expected || workers[2].expected == workers[3].expected) {
        std::fprintf(stderr, "instances of one program should see different inputs\n");
        return 1;
    }

    const int n_threads = static_cast<int>(workers.size()) + 2;
    std::vector<std::thread> threads;
    for (size_t i = 0; i < workers.size(); ++i) {
        threads.emplace_back([&, i] {
            wait_for(n_threads);
            std::vector<std::vector<unsigned char>> got;
            for (int k = 0; k < iterations; ++k) {
                const et::Error err = instances[i]->run(workers[i].seed, &got);
                check(workers[i], err, got, "execute");
            }
        });
    }
    for (size_t p = 0; p < 2; ++p) {
        threads.emplace_back([&, p] {
            const Worker &w = workers[2 * p]; // a fresh Method with instance 0's inputs
            wait_for(n_threads);
            for (int k = 0; k < std::max(1, iterations / 4); ++k) {
                Instance fresh(*w.pte);
                std::vector<std::vector<unsigned char>> got;
                et::Error err = fresh.load();
                g_inits.fetch_add(1);
                if (err == et::Error::Ok) {
                    err = fresh.run(w.seed, &got);
                }
                check(w, err, got, "init+execute");
            }
        });
    }
    for (auto &t : threads) {
        t.join();
    }
    std::printf("concurrency: %d threads, %llu runs (%llu fresh inits), %llu mismatches, "
                "%llu errors\n",
                n_threads, static_cast<unsigned long long>(g_runs.load()),
                static_cast<unsigned long long>(g_inits.load()),
                static_cast<unsigned long long>(g_mismatches.load()),
                static_cast<unsigned long long>(g_errors.load()));
    return g_mismatches.load() == 0 && g_errors.load() == 0 ? 0 : 1;
}
