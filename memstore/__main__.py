from memstore.faces.cli.main import main

main(prog_name="memstore")
