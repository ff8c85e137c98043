{
  "targets": [
    {
      "target_name": "turnkeeper_launcher",
      "sources": ["src/addon.cc"],
      "include_dirs": ["<!(node -p \"require('node-addon-api').include_dir\")"],
      "defines": [
        "NAPI_VERSION=8",
        "NAPI_CPP_EXCEPTIONS",
        "NODE_ADDON_API_DISABLE_DEPRECATED",
        "NODE_API_NO_EXTERNAL_BUFFERS_ALLOWED"
      ],
      "cflags_cc": ["-std=c++17", "-fexceptions", "-Wall", "-Wextra", "-O2"],
      "cflags_cc!": ["-fno-exceptions"],
      "xcode_settings": { "GCC_ENABLE_CPP_EXCEPTIONS": "YES", "CLANG_CXX_LANGUAGE_STANDARD": "c++17" },
      "msvs_settings": { "VCCLCompilerTool": { "ExceptionHandling": 1 } },
      "conditions": [
        ["OS=='linux'", { "sources": ["src/linux_spawn.cc"] }],
        ["OS!='linux'", { "sources": ["src/unsupported.cc"] }]
      ]
    }
  ]
}
