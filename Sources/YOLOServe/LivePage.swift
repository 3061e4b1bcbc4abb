// The live view page and its style sheet, shipped in the binary (no CDN, no files read at run
// time); its script is in LiveScript.swift.

enum LivePage {
    static func html(model: String, live: Bool) -> String {
        let escaped = model.replacingOccurrences(of: "&", with: "&amp;").replacingOccurrences(of: "<", with: "&lt;")
        let body = live ? liveBody : """
            <main class="none"><p>No live source: start <code>yolo serve --input SOURCE</code> (a video file, \
            <code>/dev/video0</code>, <code>rtsp://...</code>) for the live view.</p>\(endpoints)</main>
            """
        return """
        <!doctype html>
        <html lang="en">
        <head>
        <meta charset="utf-8">
        <meta name="viewport" content="width=device-width, initial-scale=1">
        <title>yolo serve: \(escaped)</title>
        <link rel="stylesheet" href="app.css">
        </head>
        <body>
        <header><h1>yolo serve</h1><span class="model">\(escaped)</span><span id="state" class="state"></span></header>
        \(body)
        \(live ? "<script src=\"app.js\"></script>" : "")
        </body>
        </html>
        """
    }

    static let endpoints = """
        <p class="api">API: <code>POST /detect</code> (the image as the body; <code>?thresh=&amp;nms=&amp;classes=</code>),
        <code>POST /v1/vision/detection</code> (DeepStack), <a href="health">/health</a>, <a href="metrics">/metrics</a>,
        streams <code>/video.mjpg</code>, <code>/events</code>, <code>/detections.ndjson</code></p>
        """

    static let liveBody = """
        <main>
        <section class="video"><img id="video" alt="the annotated live video"></section>
        <aside>
          <div class="fps"><span id="fps">--</span> <small>FPS</small></div>
          <table id="stages" class="stages"></table>
          <div class="controls">
            <label>Threshold <output id="thresh-value"></output>
              <input type="range" id="thresh" min="0.01" max="0.99" step="0.01"></label>
            <label>NMS <output id="nms-value"></output>
              <input type="range" id="nms" min="0.05" max="0.95" step="0.01"></label>
            <label>Classes <input type="text" id="classes" list="class-names" placeholder="all (e.g. person,car)"></label>
            <datalist id="class-names"></datalist>
            <label class="check"><input type="checkbox" id="agnostic"> NMS across classes</label>
          </div>
          <h2>Detections <span id="count" data-count="0">0</span> <small id="frame"></small></h2>
          <ol id="detections"></ol>
        </aside>
        </main>
        <footer>\(endpoints)</footer>
        """

    static let style = """
        * { box-sizing: border-box; }
        body { margin: 0; font: 14px/1.4 system-ui, sans-serif; background: #15171c; color: #e6e8ee; }
        header { display: flex; align-items: baseline; gap: 1em; padding: .6em 1em; background: #1e2129; }
        h1 { font-size: 1.2em; margin: 0; }
        h2 { font-size: 1em; margin: 1em 0 .3em; }
        .model { color: #9aa3b5; }
        .state { margin-left: auto; color: #f0b45a; }
        main { display: flex; gap: 1em; padding: 1em; align-items: flex-start; }
        main.none { display: block; }
        .video { flex: 1 1 auto; min-width: 0; }
        .video img { display: block; max-width: 100%; max-height: calc(100vh - 5.5em); width: auto; height: auto;
                     margin: 0 auto; background: #000; border-radius: 4px; }
        aside { flex: 0 0 20em; }
        .fps { font-size: 2.6em; font-weight: 600; font-variant-numeric: tabular-nums; }
        .fps small { font-size: .4em; color: #9aa3b5; }
        .stages { border-collapse: collapse; width: 100%; font-variant-numeric: tabular-nums; }
        .stages td { padding: .1em .3em; border-bottom: 1px solid #2a2e38; }
        .stages td:last-child { text-align: right; }
        .controls label { display: block; margin: .6em 0; }
        .controls input[type=range], .controls input[type=text] { width: 100%; }
        .controls output { float: right; font-variant-numeric: tabular-nums; }
        .check input { width: auto; }
        ol { margin: 0; padding-left: 1.6em; font-variant-numeric: tabular-nums; }
        li span { color: #9aa3b5; }
        footer { padding: 0 1em 1em; color: #9aa3b5; }
        code { color: #c7d0e0; }
        a { color: #7fb3ff; }
        """
}
