from kubectl_kyrec.cli.console import main

main()
