from memstore.faces.cli import main

main(prog_name="memstore")
