// report_cxx.cc: a C++ target for the report tests: blocks from operator new
// in a member function of a class in a namespace, and from a std::vector that
// grows, so the report must demangle the names and trim operator new.
// Built by tests/run-report-cxx.sh itself (the build has no C++ compiler
// requirement). Prints "ready", then waits to be snapshotted.
#include <cstdio>
#include <memory>
#include <unistd.h>
#include <vector>

namespace shop {
struct Item {
	char payload[4000];
};

class Cache {
public:
	__attribute__((noinline)) void store(int n)
	{
		for (int i = 0; i < n; i++)
			items_.push_back(std::unique_ptr<Item>(new Item())); // LINE:store
	}

private:
	std::vector<std::unique_ptr<Item>> items_;
};
} // namespace shop

// The leak a user meets in real code: an inlined helper whose allocation is
// made deep inside std::vector's templates, all inlined into it.
struct Session {
	int id;
	std::vector<char> buf;
};

struct Registry {
	std::vector<Session *> all;
	inline __attribute__((always_inline)) void add(int id)
	{
		all.push_back(new Session{id, std::vector<char>(2048)}); // LINE:add
	}
};

__attribute__((noinline)) void open_sessions(Registry &reg, int n)
{
	for (int i = 0; i < n; i++)
		reg.add(i); // LINE:open
}

int main()
{
	static shop::Cache cache;
	static Registry registry;
	cache.store(20);
	open_sessions(registry, 200);
	std::printf("ready\n");
	std::fflush(stdout);
	for (int t = 0; t < 600; t++) // at most a minute
		usleep(100000);
	return 0;
}
