#include "cli/app.h"

int main(int argc, char** argv) { return netdiag::cli::run(argc, argv); }
