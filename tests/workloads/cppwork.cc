/*
 * C++ workload for symbolization: the CPU goes to a class method
 * (hearth_ns::Engine::crunch(int)) and a function template instance
 * (hearth_ns::churn<unsigned long>(unsigned long, int)); names must show demangled.
 * Usage: cppwork SECONDS — prints its pid, spins for SECONDS of wall time.
 */
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <unistd.h>

namespace hearth_ns {

template <typename T> __attribute__((noinline)) T churn(T x, int n)
{
	for (int i = 0; i < n; i++)
		x = x * 6364136223846793005ULL + 1442695040888963407ULL + (x >> 17);
	return x;
}

class Engine {
public:
	__attribute__((noinline)) uint64_t crunch(int n);
	uint64_t state = 1;
};

uint64_t Engine::crunch(int n)
{
	for (int i = 0; i < n; i++)
		state = (state ^ (state << 13)) * 0x9e3779b97f4a7c15ULL + (uint64_t)i;
	return state;
}

} // namespace hearth_ns

static volatile uint64_t sink;

int main(int argc, char **argv)
{
	double secs = argc > 1 ? atof(argv[1]) : 10;
	auto t0 = std::chrono::steady_clock::now();
	hearth_ns::Engine e;

	std::printf("%d\n", getpid());
	std::fflush(stdout);
	while (std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count() < secs) {
		sink = e.crunch(2000000);
		sink = hearth_ns::churn<unsigned long>(sink, 2000000);
	}
	return 0;
}
