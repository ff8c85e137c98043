{
  "targets": [
    {
      "target_name": "turnkeeper_launcher",
      "sources": ["src/launcher.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED"
      ],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-O2"],
      "cflags_cc!": ["-fno-exceptions"],
      "conditions": [
        ["OS!='linux'", { "sources!": ["src/launcher.cc"], "sources": ["src/unsupported.cc"] }]
      ]
    }
  ]
}
