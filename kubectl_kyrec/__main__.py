from kubectl_kyrec.cli.main import main

main()
