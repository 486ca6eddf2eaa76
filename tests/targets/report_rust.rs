// report_rust.rs: a Rust program that keeps what it is given, for
// run-report-rust.sh: remember_orders puts Strings into a HashMap (the
// Strings from format!, the map's table from hashbrown), so that its blocks
// come through frames of alloc, core, hashbrown and std.
use std::collections::HashMap;
use std::io::Write;
use std::time::Duration;

#[inline(never)]
fn remember_orders(book: &mut HashMap<u64, String>, n: u64) {
    for i in 0..n {
        book.insert(i, format!("order {:08} for a customer who keeps ordering", i)); // LINE:remember
    }
}

fn main() {
    let mut book = HashMap::new();
    remember_orders(&mut book, 4000);
    println!("ready {}", book.len());
    std::io::stdout().flush().unwrap();
    for _ in 0..600 {
        // at most a minute
        std::thread::sleep(Duration::from_millis(100));
    }
    println!("{}", book.len());
}
