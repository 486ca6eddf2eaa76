// agent_cxx.cc: C++ allocation through operator new/new[] and the standard
// containers; the agent sees them through libstdc++'s malloc slot.
// Prints "ready 1" holding 100 objects of 4000 bytes (new), a vector of
// 250000 ints (1000000 bytes) and 10 arrays of 5000 chars (new[]); on a line on
// stdin deletes them all, prints "ready 2"; then checks and prints "ok".
#include <cstdio>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

struct Obj {
	char data[4000];
};

static std::vector<std::unique_ptr<Obj>> objs;
static std::vector<int> *ints;
static char *arrays[10];

__attribute__((noinline)) static void make_objs()
{
	for (int i = 0; i < 100; i++) {
		objs.emplace_back(new Obj);
		std::memset(objs.back()->data, i, sizeof objs.back()->data);
	}
}

__attribute__((noinline)) static void make_vector()
{
	ints = new std::vector<int>();
	ints->reserve(250000);
	for (int i = 0; i < 250000; i++)
		ints->push_back(i);
}

__attribute__((noinline)) static void make_arrays()
{
	for (int i = 0; i < 10; i++) {
		arrays[i] = new char[5000];
		std::memset(arrays[i], 'a', 5000);
	}
}

static bool wait_line(int phase)
{
	char line[64];
	std::printf("ready %d\n", phase);
	std::fflush(stdout);
	return std::fgets(line, sizeof line, stdin) != nullptr;
}

int main()
{
	int bad = 0;
	objs.reserve(100);
	make_objs();
	make_vector();
	make_arrays();
	if (!wait_line(1))
		return 3;
	for (int i = 0; i < 100; i++)
		bad += objs[i]->data[3999] != i;
	for (int i = 0; i < 250000; i += 1000)
		bad += (*ints)[i] != i;
	for (auto &a : arrays) {
		bad += a[4999] != 'a';
		delete[] a;
	}
	objs.clear();
	delete ints;
	if (!wait_line(2))
		return 3;
	if (bad)
		return 1;
	std::printf("ok\n");
	return 0;
}
