from cli_client.main import main

main()
