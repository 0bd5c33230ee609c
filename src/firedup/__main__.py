from firedup.cli import main

main()
