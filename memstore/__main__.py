from memstore.cli import main

main(prog_name="memstore")
