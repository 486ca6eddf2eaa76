/* test_stdframes.c: unit tests for the names the reports take for a
 * standard library's (src/stdframes.c): C++'s, and Rust's as libiberty
 * demangles its legacy and v0 manglings; and the user's own, which look
 * alike (a C++ namespace called core, a std trait for the user's type). */
#include <setjmp.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "stdframes.h"

static void test_cxx(void **state)
{
	(void)state;
	assert_true(std_name("void std::vector<int, std::allocator<int> >::_M_realloc_insert<int const&>"
			     "(__gnu_cxx::__normal_iterator<int*, std::vector<int, std::allocator<int> > >, "
			     "int const&)"));
	assert_true(std_name("__gnu_cxx::new_allocator<char>::allocate(unsigned long, void const*)"));
	assert_true(std_name("operator new(unsigned long)"));
	assert_false(std_name("shop::Cache::store(int)"));
	/* namespaces named as Rust's crates are the user's in C++ */
	assert_false(std_name("core::Engine::run()"));
	assert_false(std_name("alloc::Pool::get(unsigned long)"));
	assert_false(std_name(NULL));
	assert_false(std_name("main"));
}

static void test_rust(void **state)
{
	(void)state;
	/* paths in the crates of the standard library */
	assert_true(std_name("alloc::alloc::realloc"));
	assert_true(std_name("alloc::raw_vec::finish_grow"));
	assert_true(std_name("core::ptr::drop_in_place<std::rt::lang_start<()>::{{closure}}>"));
	assert_true(std_name("std::rt::lang_start_internal::{{closure}}"));
	assert_true(std_name("hashbrown::raw::RawTable<T,A>::reserve_rehash"));
	assert_true(std_name("__rust_alloc"));
	assert_true(std_name("__rdl_realloc"));
	/* impls: of their types, their traits for types that name no path */
	assert_true(std_name("<alloc::alloc::Global as core::alloc::Allocator>::grow"));
	assert_true(std_name("<hashbrown::raw::RawTable<(u64, alloc::string::String)>>::insert::"
			     "<hashbrown::map::make_hasher<u64, u64, alloc::string::String, "
			     "std::collections::hash::map::RandomState>::{closure#0}>"));
	assert_true(std_name("<&mut alloc::vec::Vec<u8> as std::io::Write>::write"));
	assert_true(std_name("<str as alloc::borrow::ToOwned>::to_owned"));
	assert_true(std_name("<T as alloc::string::ToString>::to_string"));
	assert_true(std_name("<[T] as alloc::slice::hack::ConvertVec>::to_vec"));
	assert_true(std_name("<impl core::ops::function::FnOnce<A> for &F>::call_once"));
	/* the user's own code, and a std trait for the user's type */
	assert_false(std_name("report_rust::remember_orders"));
	assert_false(std_name("report_rust::main::{{closure}}"));
	assert_false(std_name("<myapp::Order as core::clone::Clone>::clone"));
	assert_false(std_name("<impl core::fmt::Display for myapp::Order>::fmt"));
	assert_false(std_name("<myapp::Book<alloc::string::String>>::remember"));
	assert_false(std_name("corelib::thing"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_cxx),
		cmocka_unit_test(test_rust),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
