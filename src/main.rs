fn main() {
    std::process::exit(oscost::cli::main());
}
